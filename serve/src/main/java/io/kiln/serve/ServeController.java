package io.kiln.serve;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.impl.Capacity;
import io.kiln.serve.impl.ControllerLoop;
import io.kiln.serve.impl.DesiredState;
import io.kiln.serve.impl.DrainingNodes;
import io.kiln.serve.impl.SpecChanges;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * Kiln serve on one node: accepts deployments (validated YAML), keeps them as desired state in the
 * cluster's shared maps, and — on the leader (the oldest member) only — reconciles the running pools
 * against them every {@link Options#period()} and whenever they or the membership change. Every node runs
 * one: it answers {@link #apply}/{@link #delete} and serves its node-local mirror of the desired state and
 * status to the gateway.
 *
 * <p>What the controller guarantees:
 * <ol>
 *   <li><b>Convergence.</b> For every desired deployment, each node it selects (alive, carrying the node
 *       selector's labels, able to host a worker) runs exactly one pool manager of the desired version with
 *       the target number of workers, as far as the node's resources allow; pools nobody wants (deleted
 *       deployments, old versions, nodes no longer selected) are drained and removed; a pool whose node died
 *       is created again wherever a live node is selected.</li>
 *   <li><b>Nothing twice.</b> Pool managers and workers are named actors created with get-or-create, and a
 *       manager's name is claimed by the node it runs on; a pass repeated by a new leader after the old one
 *       died mid-pass finds what exists and creates only what is missing.</li>
 *   <li><b>Leader failover.</b> Desired state, the serving version and a version's failure live in the
 *       cluster's shared maps; when the leader dies the next oldest member continues from them.</li>
 *   <li><b>Rolling updates.</b> A new version gets new pools (names carry the version: nothing of the old
 *       version is ever adopted). The old version keeps serving until the new one is ready on every
 *       selected node; then traffic moves ({@link DeploymentStatus#servingVersion()}), and after the drain
 *       grace the old pools drain (queued and running requests finish) and go. A version whose every worker
 *       died before it ever served is FAILED with the reason, and the old version keeps serving.</li>
 *   <li><b>Autoscaling</b> per node between {@code min_workers} (at least one) and {@code max_workers}, on
 *       queued + executing requests per worker, after the upscale/downscale delays of the injected clock,
 *       never beyond what the node's total resources hold.</li>
 *   <li><b>Health.</b> Workers of ready pools are probed on their serving path every {@code health.period};
 *       one that does not answer within {@code health.timeout} is restarted.</li>
 *   <li><b>Delete drains:</b> the deployment stops being routed, its pools finish what they queued, then
 *       the pools and the deployment entry go.</li>
 * </ol>
 *
 * <p>Threading: all methods are thread-safe and non-blocking (YAML parsing runs on a worker thread); futures
 * complete on Vert.x or cluster threads. Reconcile passes run on one Vert.x context and never block it.
 */
public final class ServeController implements AutoCloseable {

  public static final Duration DEFAULT_PERIOD = Duration.ofSeconds(1);
  /** How long the old version keeps its pools after traffic moved, so no request races the switch. */
  public static final Duration DEFAULT_DRAIN_GRACE = Duration.ofSeconds(2);

  /**
   * What {@link #apply} does with a deployment that no node of the cluster could ever host: no node, alive or not,
   * carries its node selector's labels and has the total resources (and, for {@code per_gpu}, a whole GPU) for one
   * worker. Resources that are merely reserved now never count: workers wait for them to free.
   */
  public enum Unplaceable {
    /**
     * Store it; the controller reports it {@link DeploymentStatus.Phase#UNSCHEDULABLE}, waiting for a node that can
     * host a worker to join. The default, for an embedder that adds nodes itself (and the behaviour of Kiln before
     * the refusal).
     */
    WAIT,
    /**
     * Refuse the whole call at once ({@link DeploymentValidationException}, a problem per such deployment naming what
     * each node lacks and what a node would need), unless the deployment's {@code pool.wait_for_capacity} says such a
     * node is expected to join. Kiln's own nodes ({@code kiln up}, {@code kiln start}) apply this way.
     */
    REFUSE
  }

  /**
   * How the controller runs. Immutable.
   *
   * @param period how often the leader reconciles even without changes, greater than 0
   * @param drainGrace see {@link #DEFAULT_DRAIN_GRACE}, not negative
   * @param clockMillis the clock of autoscaling delays, health periods and the drain grace
   * @param unplaceable what apply does with a deployment no node could ever host
   */
  public record Options(Duration period, Duration drainGrace, LongSupplier clockMillis, Unplaceable unplaceable) {

    public static final Options DEFAULT = new Options(DEFAULT_PERIOD, DEFAULT_DRAIN_GRACE, System::currentTimeMillis,
        Unplaceable.WAIT);

    public Options {
      Objects.requireNonNull(period, "period");
      Objects.requireNonNull(drainGrace, "drainGrace");
      Objects.requireNonNull(clockMillis, "clockMillis");
      Objects.requireNonNull(unplaceable, "unplaceable");
      if (period.isNegative() || period.isZero()) {
        throw new IllegalArgumentException("period must be positive, got " + period);
      }
      if (drainGrace.isNegative()) {
        throw new IllegalArgumentException("drainGrace must not be negative, got " + drainGrace);
      }
    }

    public Options withPeriod(Duration p) {
      return new Options(p, drainGrace, clockMillis, unplaceable);
    }

    public Options withDrainGrace(Duration g) {
      return new Options(period, g, clockMillis, unplaceable);
    }

    public Options withClock(LongSupplier clock) {
      return new Options(period, drainGrace, clock, unplaceable);
    }

    public Options withUnplaceable(Unplaceable u) {
      return new Options(period, drainGrace, clockMillis, u);
    }
  }

  /**
   * The {@link Problem#file()} of a refused unplaceable deployment (see {@link Unplaceable#REFUSE}): the problem is
   * the cluster's, at no line of the file (line 1, column 1; path {@code deployments[i].pool}).
   */
  public static final String CLUSTER = "cluster";

  private final KilnRuntime runtime;
  private final DesiredState state;
  private final ControllerLoop loop;
  private final DeploymentLoader loader = new DeploymentLoader();
  private final Planner planner = new Planner();
  private final DrainingNodes draining;
  private final LongSupplier clockMillis;
  private final Unplaceable unplaceable;

  public ServeController(KilnRuntime runtime, PoolClient pools, PoolLoadBoard board) {
    this(runtime, pools, board, Options.DEFAULT);
  }

  public ServeController(KilnRuntime runtime, PoolClient pools, PoolLoadBoard board, Options options) {
    this.runtime = runtime;
    this.state = new DesiredState(runtime);
    this.loop = new ControllerLoop(runtime, state, pools, board, options.clockMillis(), options.period(),
        options.drainGrace());
    this.draining = new DrainingNodes(runtime);
    this.clockMillis = options.clockMillis();
    this.unplaceable = options.unplaceable();
  }

  /**
   * Loads the desired state and starts reconciling (when this node leads). Clears a draining mark this node's id
   * still carries from an earlier process (see {@link #drainThisNode()}).
   */
  public CompletionStage<Void> start() {
    return draining.unmark(runtime.nodeId()).thenCompose(v -> loop.ready()).thenCompose(v -> state.load())
        .thenRun(loop::start);
  }

  /**
   * Marks this node as draining to leave the cluster (a graceful shutdown): from the next pass on, the leader's
   * controller plans no pool onto it and leaves the pools it runs to it, neither re-creating nor retiring them
   * (the node closes them once idle, then leaves; the next leader takes over if it led). Undone only by a restart.
   */
  public CompletionStage<Void> drainThisNode() {
    return draining.mark(runtime.nodeId(), clockMillis.getAsLong()).thenRun(loop::kick);
  }

  /**
   * Validates {@code yaml} (every problem with line and column, nothing applied if any) and plans it on the
   * current cluster; unless {@code dryRun}, stores the deployments as desired state. Re-applying a running version
   * with another model, batching, queue, health, worker resources or restarts is a problem at its {@code version}:
   * its pools were created with those and keep them, so only a new version rolls such a change out; worker counts,
   * the node selector and autoscaling change in place ({@link SpecChanges}).
   *
   * @param source the file the YAML came from: relative model paths resolve against its folder
   * @return fails with {@link DeploymentValidationException} for invalid input
   */
  public CompletionStage<ApplyResult> apply(String yaml, Path source, boolean dryRun) {
    return runtime.vertx().<DeploymentFile>executeBlocking(() -> loader.load(yaml, source, this::deployed), false)
        .toCompletionStage()
        .thenCompose(file -> apply(file.deployments(), dryRun));
  }

  /**
   * Plans already validated deployments (as a {@link DeploymentLoader} returns them: distinct
   * {@code name@version}, model URIs resolved) on the current cluster and, unless {@code dryRun}, stores
   * them as desired state. A spec that changes what its running version's pools keep (see
   * {@link #apply(String, Path, boolean)}) fails the whole call with a problem at line 1, column 1 of
   * {@code "specs"} naming {@code deployments[i].version} (the YAML paths report it at the file's line first).
   * With {@link Unplaceable#REFUSE}, a deployment no node of the cluster could ever host fails the whole call, dry
   * run or not, with a problem in {@link #CLUSTER} naming {@code deployments[i].pool}, unless it waits for capacity.
   */
  public CompletionStage<ApplyResult> apply(List<DeploymentSpec> deployments, boolean dryRun) {
    List<DeploymentSpec> specs = List.copyOf(deployments);
    Plan plan;
    try {
      refuseUnversionedChanges(specs);
      plan = planner.plan(specs, runtime.clusterView());
      if (unplaceable == Unplaceable.REFUSE) {
        refuseUnplaceable(specs, plan);
      }
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (dryRun) {
      return CompletableFuture.completedFuture(new ApplyResult(specs, plan, false));
    }
    return Futures.allOf(specs.stream().map(state::apply).toList()).thenApply(v -> {
      loop.kick();
      return new ApplyResult(specs, plan, true);
    });
  }

  /**
   * The deployment of that name whose pools run with its settings now: desired, not being deleted, and not FAILED
   * (a failed version's pools are gone, so re-applying it fixed, under the same version, starts it again). What a
   * re-apply of the same version is compared with.
   */
  public Optional<DeploymentSpec> deployed(String name) {
    return state.desired(name).filter(x -> !x.deleting()).map(DesiredState.Desired::spec)
        .filter(spec -> state.status(name).filter(s -> s.phase() == DeploymentStatus.Phase.FAILED
            && spec.version().equals(s.version())).isEmpty());
  }

  private void refuseUnversionedChanges(List<DeploymentSpec> specs) {
    List<Problem> problems = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      DeploymentSpec next = specs.get(i);
      String why = SpecChanges.refusal(deployed(next.name()).orElse(null), next);
      if (why != null) {
        problems.add(new Problem("specs", 1, 1, "deployments[" + i + "].version", why));
      }
    }
    if (!problems.isEmpty()) {
      throw new DeploymentValidationException(problems);
    }
  }

  /**
   * Refuses what no node could ever host, unless it waits for capacity or the deployment of that name is desired
   * with the same needs already: it was accepted, and the nodes that could host it may only be away (a node leaving
   * cleanly takes its row with it), so re-applying the file, or a new version with the same pool, waits as it does.
   */
  private void refuseUnplaceable(List<DeploymentSpec> specs, Plan plan) {
    List<Problem> problems = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      Plan.DeploymentPlan p = plan.deployments().get(i);
      DeploymentSpec spec = specs.get(i);
      boolean accepted = state.desired(spec.name()).filter(d -> !d.deleting())
          .filter(d -> Capacity.sameNeeds(d.spec().pool(), spec.pool())).isPresent();
      if (p.noFit() != null && !spec.pool().waitForCapacity() && !accepted) {
        problems.add(new Problem(CLUSTER, 1, 1, "deployments[" + i + "].pool", Capacity.refusal(p)));
      }
    }
    if (!problems.isEmpty()) {
      throw new DeploymentValidationException(problems);
    }
  }

  /** Marks a deployment for deletion (its pools drain, then go); false if it does not exist. */
  public CompletionStage<Boolean> delete(String name) {
    return state.markDeleting(name).thenApply(found -> {
      loop.kick();
      return found;
    });
  }

  /** The version the gateway should route {@code name} to, if any is ready and it is not being deleted. */
  public Optional<String> servingVersion(String name) {
    return state.status(name).filter(s -> s.phase() != DeploymentStatus.Phase.DELETING)
        .map(DeploymentStatus::servingVersion);
  }

  /** The last status the leader wrote of each deployment, from this node's mirror. */
  public Map<String, DeploymentStatus> statuses() {
    return state.statuses();
  }

  public Optional<DeploymentStatus> status(String name) {
    return state.status(name);
  }

  /** Desired deployments (deleting ones included) by name. */
  public Map<String, DeploymentSpec> desired() {
    Map<String, DeploymentSpec> out = new TreeMap<>();
    state.desired().forEach((k, v) -> out.put(k, v.spec()));
    return out;
  }

  /**
   * The desired deployment of that name (a deleting one included), read from the node-local mirror without
   * copying the others: the request path looks a model up by name on every request.
   */
  public Optional<DeploymentSpec> desired(String name) {
    return state.desired(name).map(DesiredState.Desired::spec);
  }

  /** A desired deployment whose spec matches, without copying the desired state (which {@link #desired()} does). */
  public Optional<DeploymentSpec> findDesired(java.util.function.Predicate<DeploymentSpec> test) {
    return state.find(d -> test.test(d.spec())).map(DesiredState.Desired::spec);
  }

  /** Runs one reconcile pass soon if this node leads (after a change the controller does it itself). */
  public void kick() {
    loop.kick();
  }

  @Override
  public void close() {
    loop.close();
  }
}
