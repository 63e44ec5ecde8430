package io.kiln.serve;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.impl.Autoscaler;
import io.kiln.serve.impl.ControllerLoop;
import io.kiln.serve.impl.DesiredState;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * Kiln serve on one node: accepts deployments (validated YAML), keeps them as desired state in the
 * cluster, and — on the leader only — reconciles the running pools against them about once a second and
 * whenever they change. Every node runs one; if the leader dies the next oldest member's controller takes
 * over from the same desired state, and since pools are named actors created with get-or-create, nothing
 * is ever deployed twice.
 *
 * <p>Threading: all methods are thread-safe and non-blocking (file reads and YAML parsing run on worker
 * threads); futures complete on Vert.x or backend threads.
 */
public final class ServeController implements AutoCloseable {

  public static final Duration DEFAULT_PERIOD = Duration.ofSeconds(1);
  /** How long the old version keeps its pools after traffic moved, so no request races the switch. */
  public static final Duration DEFAULT_DRAIN_GRACE = Duration.ofSeconds(2);

  private final KilnRuntime runtime;
  private final DesiredState state;
  private final ControllerLoop loop;
  private final DeploymentLoader loader = new DeploymentLoader();
  private final Planner planner = new Planner();

  public ServeController(KilnRuntime runtime, PoolClient pools, PoolLoadBoard board) {
    this(runtime, pools, board, DEFAULT_PERIOD, DEFAULT_DRAIN_GRACE, System::currentTimeMillis);
  }

  /**
   * @param period how often the leader reconciles even without changes
   * @param drainGrace see {@link #DEFAULT_DRAIN_GRACE}
   * @param clockMillis the autoscaler's and drain grace's clock
   */
  public ServeController(KilnRuntime runtime, PoolClient pools, PoolLoadBoard board, Duration period,
                         Duration drainGrace, LongSupplier clockMillis) {
    this.runtime = runtime;
    this.state = new DesiredState(runtime.cluster());
    this.loop = new ControllerLoop(runtime, state, pools, board, new Autoscaler(), clockMillis, period, drainGrace);
  }

  /** Loads the desired state and starts reconciling (when this node leads). */
  public CompletionStage<Void> start() {
    return state.load().thenRun(loop::start);
  }

  /**
   * Validates {@code yaml} (every problem with line and column, nothing applied if any) and plans it on the
   * current cluster; unless {@code dryRun}, stores the deployments as desired state.
   *
   * @param source the file the YAML came from: relative model paths resolve against its folder
   * @return fails with {@link DeploymentValidationException} for invalid input
   */
  public CompletionStage<ApplyResult> apply(String yaml, Path source, boolean dryRun) {
    return runtime.vertx().<DeploymentFile>executeBlocking(() -> loader.load(yaml, source), false)
        .toCompletionStage()
        .thenCompose(file -> {
          Plan plan = planner.plan(file.deployments(), runtime.clusterView());
          if (dryRun) {
            return CompletableFuture.completedFuture(new ApplyResult(file.deployments(), plan, false));
          }
          CompletableFuture<?>[] stored = file.deployments().stream()
              .map(d -> state.apply(d).toCompletableFuture()).toArray(CompletableFuture[]::new);
          return CompletableFuture.allOf(stored).thenApply(v -> {
            loop.kick();
            return new ApplyResult(file.deployments(), plan, true);
          });
        });
  }

  /** Marks a deployment for deletion (its pools drain, then go); false if it does not exist. */
  public CompletionStage<Boolean> delete(String name) {
    return state.markDeleting(name).thenApply(found -> {
      loop.kick();
      return found;
    });
  }

  /** The version the gateway should route {@code name} to, if any is ready. */
  public Optional<String> servingVersion(String name) {
    return state.status(name).map(DeploymentStatus::servingVersion);
  }

  public Map<String, DeploymentStatus> statuses() {
    return state.statuses();
  }

  /** Desired deployments (deleting ones included) by name. */
  public Map<String, DeploymentSpec> desired() {
    Map<String, DeploymentSpec> out = new java.util.TreeMap<>();
    state.desired().forEach((k, v) -> out.put(k, v.spec()));
    return out;
  }

  /** Runs one reconcile pass now if this node leads (tests, and after a change). */
  public void kick() {
    loop.kick();
  }

  @Override
  public void close() {
    loop.close();
  }
}
