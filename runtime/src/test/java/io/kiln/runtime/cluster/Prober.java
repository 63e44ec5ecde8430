package io.kiln.runtime.cluster;

import io.kiln.runtime.ActorContext;
import io.kiln.runtime.ActorCreation;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SchedulingStrategy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

/** Test actors for the multi-process tests: they act from inside a node, on that node's runtime. */
public final class Prober {

  /** A counter that reports where it runs. */
  public static final class Counter {
    private int value;

    public Counter() {
    }

    public int add(int n) {
      value += n;
      return value;
    }

    public int get() {
      return value;
    }

    public String node() {
      return ActorContext.current().nodeId();
    }

    public int restarts() {
      return ActorContext.current().restartCount();
    }
  }

  /** Blocks its thread for a while, to have a call in flight when a node dies. */
  public static final class Sleeper {
    public Sleeper() {
    }

    public String sleep(long millis) {
      long end = System.nanoTime() + millis * 1_000_000L;
      while (System.nanoTime() < end) {
        LockSupport.parkNanos(10_000_000L);
      }
      return "woke";
    }
  }

  public Prober() {
  }

  private static KilnRuntime runtime() {
    return ActorContext.current().runtime();
  }

  /** This node's ledger as the node itself reports it (for diagnostics). */
  public String localAvailable() {
    return runtime().localNode().available().toString();
  }

  /** What this node's node table says another node has available (for diagnostics). */
  public String availableOf(String node) {
    return runtime().clusterView().node(node).map(n -> n.available().toString()).orElse("unknown");
  }

  public String lookupAndGet(String namespace, String name) {
    ActorHandle<Counter> h = runtime().getActor(namespace, name, Counter.class).toCompletableFuture().join();
    return h.nodeId() + ":" + h.call(Counter::get).toCompletableFuture().join();
  }

  /** Races {@code n} concurrent get-or-creates of one name from this node; returns the actor ids seen. */
  public List<String> race(String name, int n) {
    List<CompletableFuture<ActorHandle<Counter>>> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      all.add(runtime().actor(Counter::new).name(name).detached().getIfExists().remote().toCompletableFuture());
    }
    List<String> ids = new ArrayList<>();
    all.forEach(f -> ids.add(f.join().actorId()));
    return ids;
  }

  public int localAlive(String name) {
    return (int) runtime().localActors().stream()
        .filter(a -> name.equals(a.name()) && a.state() != ActorState.DEAD).count();
  }

  public String spawn(String name, String onNode, boolean detached) {
    ActorCreation<Counter> c = runtime().actor(Counter::new).name(name).strategy(SchedulingStrategy.onNode(onNode));
    if (detached) {
      c.detached();
    }
    return c.remote().toCompletableFuture().join().actorId();
  }
}
