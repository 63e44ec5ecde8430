package io.kiln.runtime;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Actor classes the runtime tests create. Static counters are keyed by a per-test tag. */
final class TestActors {

  static final Map<String, AtomicInteger> CONSTRUCTED = new ConcurrentHashMap<>();
  static final Map<String, AtomicInteger> CLOSED = new ConcurrentHashMap<>();

  static int constructed(String tag) {
    return CONSTRUCTED.computeIfAbsent(tag, t -> new AtomicInteger()).get();
  }

  static int closed(String tag) {
    return CLOSED.computeIfAbsent(tag, t -> new AtomicInteger()).get();
  }

  private TestActors() {
  }

  /** A counter; counts its constructions under its tag. */
  public static final class Counter implements AutoCloseable {
    private final String tag;
    private int value;

    public Counter(String tag) {
      this.tag = tag;
      CONSTRUCTED.computeIfAbsent(tag, t -> new AtomicInteger()).incrementAndGet();
    }

    public int add(int n) {
      value += n;
      return value;
    }

    public int get() {
      return value;
    }

    public String echo(String s) {
      return s;
    }

    public void reset() {
      value = 0;
    }

    public int restarts() {
      return ActorContext.current().restartCount();
    }

    public List<Integer> gpus() {
      return ActorContext.current().gpuIndices();
    }

    public String node() {
      return ActorContext.current().nodeId();
    }

    public int failWith(String message) {
      throw new IllegalArgumentException(message);
    }

    public int crash() {
      throw new FatalActorError("asked to crash");
    }

    @Override
    public void close() {
      CLOSED.computeIfAbsent(tag, t -> new AtomicInteger()).incrementAndGet();
    }
  }

  /** Shared with the test by reference (one process): lets it watch and release an {@link Overlap}. */
  static final class Probe {
    final AtomicInteger now = new AtomicInteger();
    final AtomicInteger max = new AtomicInteger();
    /** Calls that entered hold(), ever. */
    final AtomicInteger entered = new AtomicInteger();
    final CountDownLatch gate;
    final List<CompletableFuture<Integer>> pendingAsync = new java.util.concurrent.CopyOnWriteArrayList<>();

    Probe(int gateCount) {
      gate = new CountDownLatch(gateCount);
    }

    int releaseAsync() {
      int n = 0;
      for (CompletableFuture<Integer> f : pendingAsync) {
        if (f.complete(1)) {
          n++;
        }
      }
      return n;
    }
  }

  /**
   * Records how many calls overlap; its methods hold until the test opens the gate (sync) or completes
   * the returned future (async).
   */
  public static final class Overlap {
    private final Probe probe;

    public Overlap(Probe probe) {
      this.probe = probe;
    }

    public int hold() throws InterruptedException {
      probe.entered.incrementAndGet();
      int n = probe.now.incrementAndGet();
      probe.max.accumulateAndGet(n, Math::max);
      try {
        if (!probe.gate.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("gate never opened");
        }
        return 1;
      } finally {
        probe.now.decrementAndGet();
      }
    }

    public CompletionStage<Integer> holdAsync() {
      int n = probe.now.incrementAndGet();
      probe.max.accumulateAndGet(n, Math::max);
      CompletableFuture<Integer> f = new CompletableFuture<>();
      probe.pendingAsync.add(f);
      return f.whenComplete((v, e) -> probe.now.decrementAndGet());
    }
  }

  /** Fails its constructor the first {@code failures} times under its tag. */
  public static final class FlakyConstructor {
    public FlakyConstructor(String tag, int failures) {
      int n = CONSTRUCTED.computeIfAbsent(tag, t -> new AtomicInteger()).incrementAndGet();
      if (n <= failures) {
        throw new IllegalStateException("constructor failure " + n);
      }
    }

    public String ping() {
      return "pong";
    }
  }

  /** Creates children from inside an actor, to test owned and detached lifetimes. */
  public static final class Parent {
    public Parent() {
    }

    public String spawn(String childName, boolean detached) {
      ActorCreation<Counter> c = ActorContext.current().runtime().actor(Counter::new, childName)
          .name(childName);
      if (detached) {
        c.detached();
      }
      return c.remote().toCompletableFuture().join().actorId();
    }
  }
}
