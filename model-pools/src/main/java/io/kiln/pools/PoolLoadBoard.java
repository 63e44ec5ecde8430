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
 * and never blocks.
 */
public final class PoolLoadBoard implements AutoCloseable {

  public static final Duration DEFAULT_MAX_AGE = Duration.ofSeconds(2);

  private record Entry(JsonObject report, long receivedNanos) {
  }

  private final LongSupplier nanoClock;
  private final long maxAgeNanos;
  private final Supplier<Set<String>> aliveNodes;
  private final MessageConsumer<JsonObject> consumer;
  private final ConcurrentHashMap<String, Entry> latest = new ConcurrentHashMap<>();

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
    if (!(report.getValue("deployment") instanceof String) || !(report.getValue("version") instanceof String)
        || !(report.getValue("node") instanceof String)) {
      return;
    }
    String key = key(report.getString("deployment"), report.getString("version"), report.getString("node"));
    if (LoadReporter.isGone(report)) {
      // Only the manager that reported last may retire the entry: a restarted one may have reported already.
      latest.computeIfPresent(key, (k, e) -> same(e.report(), report, "manager") ? null : e);
      return;
    }
    latest.merge(key, new Entry(report, nanoClock.getAsLong()), (old, fresh) ->
        same(old.report(), fresh.report(), "manager") && seq(fresh.report()) < seq(old.report()) ? old : fresh);
  }

  /** The live pools of one deployment version, one per node, by node id. */
  public List<PoolLoad> pools(String deployment, String version) {
    String prefix = key(deployment, version, "");
    return collect(k -> k.startsWith(prefix));
  }

  /** Every live pool on the board. */
  public List<PoolLoad> all() {
    return collect(k -> true);
  }

  private List<PoolLoad> collect(java.util.function.Predicate<String> keys) {
    long now = nanoClock.getAsLong();
    Set<String> alive = aliveNodes.get();
    List<PoolLoad> out = new ArrayList<>();
    latest.forEach((k, e) -> {
      long age = now - e.receivedNanos();
      if (!keys.test(k)) {
        return;
      }
      if (age > maxAgeNanos) {
        latest.remove(k, e);
        return;
      }
      PoolLoad load = LoadReporter.decode(e.report(), Duration.ofNanos(Math.max(0, age)));
      if (load != null && alive.contains(load.nodeId())) {
        out.add(load);
      }
    });
    out.sort(Comparator.comparing(PoolLoad::nodeId));
    return out;
  }

  @Override
  public void close() {
    consumer.unregister();
  }

  private static String key(String deployment, String version, String node) {
    return deployment + "@" + version + "/" + node;
  }

  private static boolean same(JsonObject a, JsonObject b, String field) {
    return String.valueOf(a.getValue(field)).equals(String.valueOf(b.getValue(field)));
  }

  private static long seq(JsonObject report) {
    Object v = report.getValue("seq");
    return v instanceof Number n ? n.longValue() : 0;
  }
}
