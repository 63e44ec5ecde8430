package io.kiln.pools.impl;

import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.PoolStats;
import io.vertx.core.Context;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * Publishes one pool manager's load on the event bus ({@link #ADDRESS}; the clustered bus reaches every
 * node) as a small JSON object: every {@link #PERIOD_MS} ms, at once when the queue moved by a large step
 * or readiness flipped, and a last {@code gone} report when the manager closes. Lives on the manager's
 * context: every method must be called there.
 */
public final class LoadReporter {

  /** Event-bus address of load reports. */
  public static final String ADDRESS = "kiln.pool-load";
  public static final long PERIOD_MS = 100;

  private final Context context;
  private final PoolSpec spec;
  private final String managerId;
  private final Supplier<PoolStats> stats;
  private final IntSupplier queueDepth;
  private final BooleanSupplier ready;
  private final BooleanSupplier draining;
  private final Supplier<java.util.List<String>> models;
  private final int step;
  private long timer = -1;
  private long seq;
  private int lastQueue;
  private boolean lastReady;
  private boolean stopped;

  /**
   * @param queueDepth the pool's queue depth now, read at every {@link #changed()} (a request's admission: no whole
   *                   {@link PoolStats} snapshot per request)
   * @param models the models a multiplexed pool holds loaded (the first {@value PoolLoad#MAX_MODELS} are reported)
   */
  public LoadReporter(Context context, PoolSpec spec, String managerId, Supplier<PoolStats> stats,
                      IntSupplier queueDepth, BooleanSupplier ready, BooleanSupplier draining,
                      Supplier<java.util.List<String>> models) {
    this.models = models;
    this.context = context;
    this.spec = spec;
    this.managerId = managerId;
    this.stats = stats;
    this.queueDepth = queueDepth;
    this.ready = ready;
    this.draining = draining;
    // Routers compare queue depths with capacity: a move of 1/16 of it (at least 8) is worth a report now.
    this.step = Math.max(8, spec.config().maxQueued() / 16);
  }

  public void start() {
    publish();
    timer = context.owner().setPeriodic(PERIOD_MS, id -> publish());
  }

  /** Publishes now if the load changed a lot since the last report. */
  public void changed() {
    if (stopped) {
      return;
    }
    int q = queueDepth.getAsInt();
    int capacity = spec.config().maxQueued();
    // Filling up and getting room again are what routers act on: report those at once, however small.
    boolean fullnessChanged = (q >= capacity) != (lastQueue >= capacity);
    if (Math.abs(q - lastQueue) >= step || fullnessChanged || ready.getAsBoolean() != lastReady) {
      publish();
    }
  }

  public void publish() {
    if (stopped) {
      return;
    }
    PoolStats s = stats.get();
    lastQueue = s.queueDepth();
    lastReady = ready.getAsBoolean();
    context.owner().eventBus().publish(ADDRESS, encode(s, lastReady, draining.getAsBoolean(), false));
  }

  /** Stops reporting and tells the board this manager is gone. Idempotent. */
  public void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    if (timer >= 0) {
      context.owner().cancelTimer(timer);
    }
    context.owner().eventBus().publish(ADDRESS, encode(stats.get(), false, draining.getAsBoolean(), true));
  }

  private JsonObject encode(PoolStats s, boolean isReady, boolean isDraining, boolean gone) {
    JsonObject o = new JsonObject();
    java.util.List<String> held = models.get();
    if (!held.isEmpty()) {
      o.put("models", new io.vertx.core.json.JsonArray(new java.util.ArrayList<Object>(
          held.size() > PoolLoad.MAX_MODELS ? held.subList(0, PoolLoad.MAX_MODELS) : held)));
    }
    return o
        .put("deployment", spec.deployment()).put("version", spec.version()).put("node", spec.nodeId())
        .put("manager", managerId).put("seq", ++seq).put("gone", gone)
        .put("ready", isReady).put("draining", isDraining)
        .put("queueDepth", s.queueDepth()).put("inFlight", s.inFlightRequests())
        .put("capacity", spec.config().maxQueued())
        .put("idle", s.idleWorkers()).put("busy", s.busyWorkers()).put("workers", s.totalWorkers());
  }

  /**
   * Reads a report; null if it is malformed (reports come from other nodes: never trust them to parse).
   *
   * @param age how long ago it arrived
   */
  public static PoolLoad decode(JsonObject m, Duration age) {
    try {
      if (m.getInteger("queueDepth", 0) < 0 || m.getInteger("inFlight", 0) < 0 || m.getInteger("capacity", 0) < 0) {
        return null;
      }
      return new PoolLoad(m.getString("deployment"), m.getString("version"), m.getString("node"),
          m.getString("manager"), m.getBoolean("ready", false), m.getBoolean("draining", false),
          m.getInteger("queueDepth", 0), m.getInteger("inFlight", 0), m.getInteger("capacity", 0),
          m.getInteger("idle", 0), m.getInteger("busy", 0), m.getInteger("workers", 0), age, models(m));
    } catch (ClassCastException e) {
      return null;
    }
  }

  private static java.util.List<String> models(JsonObject m) {
    io.vertx.core.json.JsonArray a = m.getJsonArray("models");
    if (a == null) {
      return java.util.List.of();
    }
    java.util.List<String> out = new java.util.ArrayList<>();
    for (int i = 0; i < a.size() && out.size() < PoolLoad.MAX_MODELS; i++) {
      if (a.getValue(i) instanceof String name) {
        out.add(name);
      }
    }
    return out;
  }

  /** Whether a report says its manager closed. */
  public static boolean isGone(JsonObject m) {
    return Boolean.TRUE.equals(m.getValue("gone"));
  }
}
