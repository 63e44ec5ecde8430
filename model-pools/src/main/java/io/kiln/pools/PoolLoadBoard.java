package io.kiln.pools;

import io.kiln.pools.impl.LoadReporter;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeView;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Every pool's load as its manager last reported it, for routing: each {@link PoolManager} publishes its
 * queue depth, requests in flight, capacity and readiness every ~100 ms (and at once on big changes) on the
 * event bus, which the clustered bus delivers to every node; the board keeps the latest report per
 * (deployment, version, node). Reports older than {@code maxAge} (default 2 s: the manager is gone or cut
 * off), from a manager that said it closed, or from a node that is no longer alive are left out.
 *
 * <p><b>Threading:</b> reports arrive on a Vert.x event loop; {@link #pools} may be called from any thread
 * (e.g. on every routing decision) and never blocks: it looks at one deployment version's entries only.
 */
public final class PoolLoadBoard implements AutoCloseable {

  public static final Duration DEFAULT_MAX_AGE = Duration.ofSeconds(2);
  /** Node liveness is read from the cluster view at most this often. */
  private static final long ALIVE_REFRESH_NANOS = 100_000_000L;

  /** The latest report of one pool; {@code load.age()} is zero, the real age comes from {@code receivedNanos}. */
  private record Entry(PoolLoad load, long seq, long receivedNanos) {
  }

  private record Alive(Set<String> nodes, long readNanos) {
  }

  private final LongSupplier nanoClock;
  private final long maxAgeNanos;
  private final Supplier<Set<String>> aliveNodes;
  private final MessageConsumer<JsonObject> consumer;
  /** deployment@version → node → latest report. */
  private final ConcurrentHashMap<String, ConcurrentHashMap<String, Entry>> latest = new ConcurrentHashMap<>();
  // Replaced whole, so readers see a consistent set without locking.
  private volatile Alive alive;

  /** A board on {@code runtime}'s event bus, judging liveness by its cluster view. */
  public PoolLoadBoard(KilnRuntime runtime) {
    this(runtime.vertx(), System::nanoTime, DEFAULT_MAX_AGE, () -> runtime.clusterView().aliveNodes().stream()
        .map(NodeView::nodeId).collect(Collectors.toSet()));
  }

  /**
   * @param nanoClock the clock that dates reports on arrival (a report's age never depends on the sender's clock)
   * @param aliveNodes the nodes alive now; reports from others are left out
   */
  public PoolLoadBoard(Vertx vertx, LongSupplier nanoClock, Duration maxAge, Supplier<Set<String>> aliveNodes) {
    this.nanoClock = nanoClock;
    this.maxAgeNanos = maxAge.toNanos();
    this.aliveNodes = aliveNodes;
    this.consumer = vertx.eventBus().consumer(LoadReporter.ADDRESS, m -> received(m.body()));
  }

  /** Completes once the board is subscribed (on a cluster, once the subscription has propagated). */
  public CompletionStage<Void> ready() {
    return consumer.completion().toCompletionStage();
  }

  private void received(JsonObject report) {
    PoolLoad load = LoadReporter.decode(report, Duration.ZERO);
    if (load == null || load.deployment() == null || load.version() == null || load.nodeId() == null) {
      return; // reports come from other nodes: a malformed one is dropped, never trusted
    }
    Map<String, Entry> pools = latest.computeIfAbsent(PoolNames.deployment(load.deployment(), load.version()),
        k -> new ConcurrentHashMap<>());
    if (LoadReporter.isGone(report)) {
      // Only the manager that reported last may retire the entry: a restarted one may have reported already.
      pools.computeIfPresent(load.nodeId(), (k, e) -> String.valueOf(e.load().managerId())
          .equals(String.valueOf(load.managerId())) ? null : e);
      return;
    }
    long seq = report.getValue("seq") instanceof Number n ? n.longValue() : 0;
    Entry fresh = new Entry(load, seq, nanoClock.getAsLong());
    pools.merge(load.nodeId(), fresh, (old, now) -> String.valueOf(old.load().managerId())
        .equals(String.valueOf(now.load().managerId())) && now.seq() < old.seq() ? old : now);
  }

  /** The live pools of one deployment version, at most one per node, ordered by node id. */
  public List<PoolLoad> pools(String deployment, String version) {
    Map<String, Entry> pools = latest.get(PoolNames.deployment(deployment, version));
    if (pools == null) {
      return List.of();
    }
    long now = nanoClock.getAsLong();
    Set<String> liveNodes = aliveNodes(now);
    List<PoolLoad> out = new ArrayList<>(pools.size());
    pools.forEach((node, e) -> {
      long age = now - e.receivedNanos();
      if (age > maxAgeNanos) {
        pools.remove(node, e);
      } else if (liveNodes.contains(node)) {
        PoolLoad l = e.load();
        out.add(new PoolLoad(l.deployment(), l.version(), l.nodeId(), l.managerId(), l.ready(), l.draining(),
            l.queueDepth(), l.inFlight(), l.capacity(), l.idleWorkers(), l.busyWorkers(), l.totalWorkers(),
            Duration.ofNanos(Math.max(0, age)), l.models()));
      }
    });
    out.sort(Comparator.comparing(PoolLoad::nodeId));
    return out;
  }

  /** Every live pool on the board. */
  public List<PoolLoad> all() {
    List<PoolLoad> out = new ArrayList<>();
    for (String key : latest.keySet()) {
      int at = key.indexOf('@');
      out.addAll(pools(key.substring(0, at), key.substring(at + 1)));
    }
    return out;
  }

  private Set<String> aliveNodes(long now) {
    Alive a = alive;
    if (a == null || now - a.readNanos() > ALIVE_REFRESH_NANOS || now - a.readNanos() < 0) {
      a = new Alive(Set.copyOf(aliveNodes.get()), now);
      alive = a;
    }
    return a.nodes();
  }

  @Override
  public void close() {
    consumer.unregister();
  }
}
