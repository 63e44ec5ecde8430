package io.kiln.deploy.node;

import io.kiln.deploy.node.WarmupReport.ModelWarmup;
import io.kiln.deploy.node.WarmupReport.Protocol;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The second part of a node's warm-up (see {@link WarmupOptions#deployments()}): the user's own deployments,
 * warmed through the node's real HTTP and gRPC ports to their own pools (their engine, their batch sizes, their
 * response sizes), so that what compiles after ready is not the user's path. It waits, within
 * {@link WarmupOptions#loadTimeout()}, until this node's pool of each deployment is ready (a deployment that failed,
 * or is not ready in time, is named and skipped), synthesises each model's requests from its signature at each of
 * its warm-up batch sizes ({@link WarmupRequests}; a model whose inputs cannot be synthesised is named and
 * skipped), then drives them all at once ({@link WarmupTraffic}) until the throughput is flat and the JIT quiet,
 * for {@link WarmupOptions#duration()} at most. Every step is bounded; nothing here fails: problems go into the
 * {@link Result}.
 *
 * <p>Non-blocking; {@link #loaded} and {@link #run} once each, {@link #stop} and {@link #close} from any thread.
 */
final class ModelsWarmup {

  private static final Logger LOG = LoggerFactory.getLogger(ModelsWarmup.class);
  private static final long POLL_MS = 20;

  /**
   * What the user-model warm-up did.
   *
   * @param models every expected deployment, in order, with its counts and problem
   * @param answered requests answered per protocol, all models together
   * @param failed requests failed per protocol
   * @param settled whether the traffic ended flat with the JIT quiet, not at its budget
   * @param problem a summary of the models' problems, or null
   */
  record Result(List<ModelWarmup> models, Map<Protocol, Long> answered, Map<Protocol, Long> failed, boolean settled,
                String problem) {
  }

  private final Vertx vertx;
  private final String nodeId;
  private final ServeController serve;
  private final PoolLoadBoard board;
  private final MeterRegistry registry;
  private final WarmupOptions options;
  private final WarmupTraffic.Ports ports;
  private final LongSupplier nanoClock;
  /** Per expected deployment: its spec once loaded here, or why not (filled by {@link #loaded}). */
  private final Map<String, Object> state = new LinkedHashMap<>();
  private final CompletableFuture<Void> loaded = new CompletableFuture<>();
  private volatile WarmupTraffic traffic;
  private volatile boolean stopped;
  private volatile boolean closed;

  ModelsWarmup(Vertx vertx, String nodeId, ServeController serve, PoolLoadBoard board,
               MeterRegistry registry, WarmupOptions options, WarmupTraffic.Ports ports, LongSupplier nanoClock) {
    this.vertx = vertx;
    this.nodeId = nodeId;
    this.serve = serve;
    this.board = board;
    this.registry = registry;
    this.options = options;
    this.ports = ports;
    this.nanoClock = nanoClock;
    long deadline = nanoClock.getAsLong() + options.loadTimeout().toNanos();
    long timer = vertx.setPeriodic(POLL_MS, id -> poll(deadline));
    loaded.whenComplete((v, e) -> vertx.cancelTimer(timer));
    poll(deadline);
  }

  /** Completes once every expected deployment's pool on this node is ready, or failed, or the load bound passed. */
  CompletionStage<Void> loaded() {
    return loaded;
  }

  private synchronized void poll(long deadline) {
    if (loaded.isDone()) {
      return;
    }
    boolean late = stopped || nanoClock.getAsLong() - deadline >= 0;
    boolean pending = false;
    for (String name : options.deployments()) {
      if (state.get(name) instanceof DeploymentSpec) {
        continue;
      }
      DeploymentSpec spec = serve.desired(name).orElse(null);
      DeploymentStatus status = serve.status(name).orElse(null);
      if (spec != null && serve.servingVersion(name).isPresent() && board.pools(name, spec.version()).stream()
          .anyMatch(l -> l.nodeId().equals(nodeId) && l.ready() && !l.draining())) {
        state.put(name, spec);
      } else if (status != null && (status.phase() == DeploymentStatus.Phase.FAILED
          || status.phase() == DeploymentStatus.Phase.UNSCHEDULABLE)) {
        state.put(name, "skipped: the deployment is " + status.phase() + ": " + status.message());
      } else if (late) {
        state.put(name, stopped ? "skipped: the node is closing" : "skipped: no ready pool on this node within "
            + options.loadTimeout().toSeconds() + " s" + (status == null ? "" : " (" + status.phase() + ": "
            + status.message() + ")"));
      } else {
        pending = true;
      }
    }
    if (!pending) {
      loaded.complete(null);
    }
  }

  /** Waits for {@link #loaded}, then drives the traffic; the stage completes with the result and never fails. */
  CompletionStage<Result> run() {
    return loaded.thenCompose(v -> {
      Map<String, String> problems = new LinkedHashMap<>();
      List<WarmupTraffic.Target> targets = new ArrayList<>();
      synchronized (this) {
        for (String name : options.deployments()) {
          Object s = state.get(name);
          if (s instanceof DeploymentSpec spec) {
            boolean streaming = spec.model().streaming();
            String why = spec.multiplexed() ? "a multiplexed deployment (its models load on demand)"
                : spec.model().sequence() != null ? "a sequence model (its requests belong to sequences)"
                : WarmupRequests.why(spec.model().signature(), streaming);
            if (why != null) {
              problems.put(name, "skipped: " + why);
            } else {
              targets.add(new WarmupTraffic.Target(name, streaming, requests(spec, streaming)));
            }
          } else {
            problems.put(name, (String) s);
          }
        }
      }
      if (targets.isEmpty() || stopped) {
        return CompletableFuture.completedFuture(result(targets, problems));
      }
      return ports.open(vertx, targets, registry, nanoClock)
          .thenCompose(t -> {
            traffic = t;
            if (stopped) {
              t.stop();
            }
            long watchdog = vertx.setTimer(options.duration().plus(NodeWarmup.GRACE).toMillis(), id -> t.stop());
            return t.run(options.duration(), options.maxRequests()).toCompletionStage()
                .toCompletableFuture().copy()
                .orTimeout(options.duration().plus(NodeWarmup.GRACE.multipliedBy(2)).toMillis(), TimeUnit.MILLISECONDS)
                .handle((x, err) -> {
                  vertx.cancelTimer(watchdog);
                  if (err != null) {
                    t.stop();
                    problems.put("*", "the traffic did not end in time: " + err);
                  }
                  linger(t);
                  return result(targets, problems);
                });
          });
    });
  }

  /**
   * The requests of {@code spec}'s model: one row first, then each warm-up batch size within its batching; a
   * streaming model's only one row (a generate request is one row; its batch is the streams a worker steps together).
   */
  private static List<WarmupRequests> requests(DeploymentSpec spec, boolean streaming) {
    if (streaming) {
      return List.of(WarmupRequests.of(spec.name(), spec.model().signature(), 1, true));
    }
    TreeSet<Integer> sizes = new TreeSet<>(spec.model().warmupBatchSizes());
    int max = Math.max(1, spec.batching().maxBatchSize());
    sizes.removeIf(n -> n > max);
    sizes.add(1);
    long[] first = spec.model().signature().inputs().get(0).shape();
    if (first.length == 0 || first[0] != -1) {
      sizes.retainAll(List.of(1)); // no variable batch dimension: one shape only
    }
    List<WarmupRequests> out = new ArrayList<>();
    for (int n : sizes) {
      out.add(WarmupRequests.of(spec.name(), spec.model().signature(), n));
    }
    return out;
  }

  private Result result(List<WarmupTraffic.Target> targets, Map<String, String> problems) {
    WarmupTraffic t = traffic;
    Map<Protocol, Long> answered = new EnumMap<>(Protocol.class);
    Map<Protocol, Long> failed = new EnumMap<>(Protocol.class);
    for (Protocol p : Protocol.values()) {
      answered.put(p, t == null ? 0 : t.answered(p));
      failed.put(p, t == null ? 0 : t.failed(p));
    }
    List<ModelWarmup> out = new ArrayList<>();
    List<String> summary = new ArrayList<>();
    for (String name : options.deployments()) {
      WarmupTraffic.Target target = targets.stream().filter(x -> x.model.equals(name)).findFirst().orElse(null);
      String problem = problems.get(name);
      long ok = target == null ? 0 : target.answered.get();
      long bad = target == null ? 0 : target.failed.get();
      if (problem == null && target != null) {
        problem = ok == 0 ? "no warm-up request was answered (last failure: " + target.lastFailure + ")"
            : bad > 0 ? bad + " warm-up request(s) failed (last: " + target.lastFailure + ")" : null;
      }
      out.add(new ModelWarmup(name, ok, bad, problem));
      if (problem != null) {
        summary.add(name + ": " + problem);
      }
    }
    if (problems.containsKey("*")) {
      summary.add(problems.get("*"));
    }
    Result r = new Result(out, answered, failed, t != null && t.settled(), summary.isEmpty() ? null
        : "user model warm-up: " + String.join("; ", summary));
    if (r.problem() != null) {
      LOG.warn("node {}: {}", nodeId, r.problem());
    }
    return r;
  }

  /** Ends the traffic, and the wait for pools, early (the node is closing). */
  void stop() {
    stopped = true;
    WarmupTraffic t = traffic;
    if (t != null) {
      t.stop();
    }
  }

  /** Keeps the traffic's idle clients for {@link NodeWarmup#LINGER}, as {@link NodeWarmup} does, then closes them. */
  private void linger(WarmupTraffic t) {
    if (closed) {
      t.close();
    } else {
      vertx.setTimer(NodeWarmup.LINGER.toMillis(), id -> t.close());
    }
  }

  /** Ends the traffic and closes its clients now; idempotent. */
  void close() {
    closed = true;
    stop();
    WarmupTraffic t = traffic;
    if (t != null) {
      t.close();
    }
  }

  static Duration bound(WarmupOptions o) {
    return o.deployments().isEmpty() ? Duration.ZERO
        : o.loadTimeout().plus(o.duration()).plus(NodeWarmup.GRACE.multipliedBy(3));
  }
}
