package io.kiln.deploy.node;

import io.kiln.deploy.node.WarmupReport.Protocol;
import io.kiln.gateway.ModelInfo;
import io.kiln.pools.BatchingSpec;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.pools.WorkerStatus;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.Resources;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node's warm-up of its serving path (see {@link WarmupOptions}), start to end: a node-local pool of the
 * warm-up model ({@code _warmup-<random>}, two zero-resource workers, batching up to 8 rows, never waiting
 * for fuller batches) created on this node by this node, shown to this node's gateway only as an
 * {@link NodeModelDirectory internal} model once the load board routes to it, loopback traffic through the
 * gateway's real ports ({@link WarmupTraffic}), then the model withdrawn, the pool killed and its meters
 * removed. Every step is bounded; a failure ends the warm-up with a problem in its report, never
 * with an exception, and what was created is torn down all the same.
 *
 * <p>Non-blocking; {@link #run} once, {@link #stop} from any thread.
 */
final class NodeWarmup {

  private static final Logger LOG = LoggerFactory.getLogger(NodeWarmup.class);
  static final String PREFIX = PoolNames.NODE_LOCAL_PREFIX + "warmup-";
  static final String VERSION = "1";
  static final int WORKERS = 2;
  /** How long the pool may take to get its workers ready and routed. */
  static final Duration SETUP_TIMEOUT = Duration.ofSeconds(30);
  /** How long in-flight requests may take past the traffic's budget, and teardown steps each. */
  static final Duration GRACE = Duration.ofSeconds(10);
  /** How long the traffic's idle clients stay after it (see {@link #linger}). */
  static final Duration LINGER = Duration.ofSeconds(60);

  private final KilnRuntime runtime;
  private final PoolClient pools;
  private final PoolLoadBoard board;
  private final NodeModelDirectory models;
  private final MeterRegistry registry;
  private final WarmupOptions options;
  private final WarmupTraffic.Ports ports;
  private final LongSupplier nanoClock;
  private final String name = PREFIX + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private volatile WarmupTraffic traffic;
  private volatile ActorHandle<PoolManager> manager;
  private volatile boolean stopped;
  private volatile boolean cut;
  private boolean closed; // guarded by this, as lingering
  private long lingering = -1;


  NodeWarmup(KilnRuntime runtime, PoolClient pools, PoolLoadBoard board, NodeModelDirectory models,
             MeterRegistry registry, WarmupOptions options, WarmupTraffic.Ports ports, LongSupplier nanoClock) {
    this.runtime = runtime;
    this.pools = pools;
    this.board = board;
    this.models = models;
    this.registry = registry;
    this.options = options;
    this.ports = ports;
    this.nanoClock = nanoClock;
  }

  /** The warm-up model's name (random per node start, so no client can aim at it). */
  String model() {
    return name;
  }

  /** Runs the warm-up; the stage completes once the pool is gone, with the report, and never fails. */
  CompletionStage<WarmupReport> run() {
    long started = nanoClock.getAsLong();
    PoolSpec spec = new PoolSpec(name, VERSION, runtime.nodeId(), options.model(),
        PoolConfig.of(new BatchingSpec(8, Duration.ZERO), new QueueSpec(1024, GRACE)), 0, Resources.NONE, 0,
        HealthSpec.DEFAULT);
    CompletionStage<Void> served = bounded(PoolManager.getOrCreate(runtime, spec), SETUP_TIMEOUT)
        .thenCompose(h -> {
          manager = h;
          return bounded(pools.scale(name, VERSION, runtime.nodeId(), WORKERS), SETUP_TIMEOUT);
        })
        .thenCompose(live -> live > 0 ? routed() : failedWorkers())
        // The traffic ends by itself within the budget; bound it anyway, so a request chain that never completes
        // (seen on 2 starved cores: a call sent on a client closed under it) cannot hold the node not ready.
        .thenCompose(v -> bounded(drive(), options.duration().plus(SETUP_TIMEOUT))
            .whenComplete((x, err) -> {
              if (err != null) {
                stop();
              }
            }));
    return served.handle((v, err) -> err == null ? shortfall() : "warm-up failed: " + describe(err))
        .thenCompose(problem -> teardown().handle((v, err) -> {
          String p = err == null ? problem
              : (problem == null ? "" : problem + "; ") + "warm-up pool teardown failed: " + describe(err);
          return report(p, Duration.ofNanos(nanoClock.getAsLong() - started));
        }));
  }

  /**
   * Ends the traffic soon, yet as a full warm-up (every lane still sends its first request): the user's own
   * models are loaded and take over the warm-up ({@link ModelsWarmup}).
   */
  void cutShort() {
    cut = true;
    WarmupTraffic t = traffic;
    if (t != null) {
      t.finishSoon();
    }
  }

  /** Ends the traffic early (the node is closing); {@link #run}'s stage still completes after teardown. */
  void stop() {
    stopped = true;
    WarmupTraffic t = traffic;
    if (t != null) {
      t.stop();
    }
  }

  private CompletionStage<Void> failedWorkers() {
    return pools.status(name, VERSION, runtime.nodeId()).handle((status, err) -> {
      String why = status == null ? null : status.workers().stream().map(WorkerStatus::lastError)
          .filter(Objects::nonNull).findFirst().orElse(null);
      throw new IllegalStateException("no worker of the warm-up pool started" + (why != null ? ": " + why : ""));
    });
  }

  /** Completes once this node's load board lists the pool as ready: the gateway routes by the board. */
  private CompletionStage<Void> routed() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    long deadline = nanoClock.getAsLong() + SETUP_TIMEOUT.toNanos();
    long timer = runtime.vertx().setPeriodic(5, id -> {
      boolean ready = board.pools(name, VERSION).stream().anyMatch(l -> routable(l, runtime.nodeId()));
      if (ready) {
        f.complete(null);
      } else if (stopped || nanoClock.getAsLong() - deadline >= 0) {
        f.completeExceptionally(new IllegalStateException(stopped ? "stopped"
            : "the warm-up pool was not reported ready within " + SETUP_TIMEOUT.toSeconds() + " s"));
      }
    });
    // Bounded on its own too: the timer lives on the caller's context, which may be the pool manager's.
    return bounded(f, SETUP_TIMEOUT.plus(GRACE)).whenComplete((v, e) -> runtime.vertx().cancelTimer(timer));
  }

  private CompletionStage<Void> drive() {
    if (stopped) {
      return CompletableFuture.failedFuture(new IllegalStateException("stopped"));
    }
    models.addInternal(new ModelInfo(name, VERSION, List.of(VERSION), "kiln_builtin", options.model().signature(),
        true, 0));
    List<WarmupRequests> requests = new java.util.TreeSet<>(options.model().warmupBatchSizes()).stream()
        .map(rows -> WarmupRequests.of(name, options.model().signature(), rows)).toList();
    // Opened off this (an actor's) context, so that its clients belong to no verticle of the pool's.
    return ports.open(runtime.vertx(), List.of(new WarmupTraffic.Target(name, requests)), registry, nanoClock)
        .thenCompose(t -> {
          traffic = t;
          if (stopped) {
            t.stop();
          }
          if (cut) {
            t.finishSoon();
          }
          long watchdog = runtime.vertx().setTimer(options.duration().plus(GRACE).toMillis(), id -> t.close());
          return t.run(options.duration(), options.maxRequests())
              .onComplete(ar -> {
                runtime.vertx().cancelTimer(watchdog);
                linger(t);
              })
              .toCompletionStage();
        });
  }

  /**
   * Closes the traffic's clients only {@link #LINGER} after the traffic, their connections idle meanwhile:
   * closing them at once loaded the classes of connection tear-down and took its branches in code the
   * server shares with them (Netty's and Vert.x's promises, encoders, event loops), and the JIT deoptimized
   * much of the just-compiled request path in the first second after ready (measured).
   */
  private void linger(WarmupTraffic t) {
    synchronized (this) {
      if (!closed) {
        lingering = runtime.vertx().setTimer(LINGER.toMillis(), id -> close());
        return;
      }
    }
    t.close();
  }

  /** Ends the traffic, if still running, and closes its clients now; idempotent. */
  void close() {
    stop();
    long timer;
    synchronized (this) {
      closed = true;
      timer = lingering;
      lingering = -1;
    }
    if (timer >= 0) {
      runtime.vertx().cancelTimer(timer);
    }
    WarmupTraffic t = traffic;
    if (t != null) {
      t.close();
    }
  }

  /** Why the traffic fell short (a protocol never answered, some requests failed), or null. */
  private String shortfall() {
    WarmupTraffic t = traffic;
    List<String> silent = new ArrayList<>();
    long failed = 0;
    for (Protocol p : Protocol.values()) {
      if (t.answered(p) == 0) {
        silent.add(p.tag());
      }
      failed += t.failed(p);
    }
    if (!silent.isEmpty()) {
      return "no " + String.join(", ", silent) + " warm-up request was answered (last failure: " + t.lastFailure() + ")";
    }
    // Cut short for the user's models, a lane sends one request only: a refusal then (a pool's load report is up to
    // 100 ms old) is no shortfall of the serving path's warm-up, which the user's models carry on.
    return failed == 0 || cut ? null : failed + " warm-up request(s) failed (last: " + t.lastFailure() + ")";
  }

  /**
   * Withdraws the model, kills the pool's manager and workers (the traffic is over: nothing is queued), then
   * drops the pool's meters. Not drained: a drain takes branches of the dispatcher's hot methods that serving
   * never takes, and the JIT deoptimized them for every pool (measured).
   */
  private CompletionStage<Void> teardown() {
    models.removeInternal(name);
    String node = runtime.nodeId();
    List<CompletionStage<Void>> kills = new ArrayList<>();
    ActorHandle<PoolManager> m = manager;
    kills.add(m != null ? bounded(runtime.kill(m, false), GRACE) : kill(PoolNames.poolManager(name, VERSION, node)));
    for (int i = 0; i < WORKERS; i++) {
      kills.add(kill(PoolNames.worker(name, VERSION, node, i)));
    }
    return Futures.allOf(kills).whenComplete((v, err) -> removeMeters());
  }

  /** Kills a named actor of the pool if it is still registered; one that is gone already is fine. */
  private CompletionStage<Void> kill(String actor) {
    return bounded(runtime.getActor(PoolManager.NAMESPACE, actor, Object.class), GRACE)
        .handle((h, err) -> h)
        .thenCompose(h -> h == null ? CompletableFuture.<Void>completedFuture(null)
            : bounded(runtime.kill(h, false), GRACE).handle((v, err) -> (Void) null));
  }

  private void removeMeters() {
    for (Meter m : List.copyOf(registry.getMeters())) {
      if (name.equals(m.getId().getTag("deployment"))) {
        registry.remove(m);
      }
    }
  }

  private WarmupReport report(String problem, Duration took) {
    WarmupTraffic t = traffic;
    Map<Protocol, Long> answered = new EnumMap<>(Protocol.class);
    Map<Protocol, Long> failed = new EnumMap<>(Protocol.class);
    for (Protocol p : Protocol.values()) {
      answered.put(p, t == null ? 0 : t.answered(p));
      failed.put(p, t == null ? 0 : t.failed(p));
    }
    WarmupReport r = new WarmupReport(true, name, answered, failed, took, t != null && t.settled(), problem);
    if (problem == null) {
      LOG.info("node {} warmed up its serving path: {}", runtime.nodeId(), r.describe());
    } else {
      LOG.warn("node {} goes ready without a full warm-up, so its first requests may be slow: {}", runtime.nodeId(),
          r.describe());
    }
    return r;
  }

  private static <T> CompletionStage<T> bounded(CompletionStage<T> stage, Duration timeout) {
    return stage.toCompletableFuture().copy().orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  private static String describe(Throwable err) {
    Throwable t = Futures.unwrap(err);
    return t.getMessage() != null ? t.getMessage() : t.toString();
  }

  /** Whether the gateway would route to this report's pool: this node's, ready, not draining. */
  private static boolean routable(PoolLoad l, String node) {
    return l.nodeId().equals(node) && l.ready() && !l.draining();
  }
}
