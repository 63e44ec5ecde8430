package io.kiln.serve.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeView;
import io.kiln.serve.AutoscalingSpec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import io.kiln.serve.DeploymentStatus.PoolState;
import io.kiln.serve.Plan;
import io.kiln.serve.Planner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pass of the controller: makes the running pools match the desired deployments. For every node a
 * deployment selects it get-or-creates the desired version's pool manager (named, so a pass repeated by a
 * new leader never deploys twice), keeps its workers at the (autoscaled) target, reports what the pools'
 * own health checks repaired, and decides the serving version ({@link Rollout}); pools of other versions,
 * or on nodes no longer selected, are drained and removed once the desired version has served everywhere
 * for the drain grace; a version whose every worker died before it ever served is FAILED and removed.
 * Deleted deployments are drained, then dropped; pools of deployments nobody wants are retired. Nodes draining to
 * leave ({@link DrainingNodes}) get no pool, and the pools they still run are theirs to close. Each pass writes
 * the status.
 *
 * <p>Threading: {@link #pass()} must not overlap itself (the loop serialises passes). It never blocks:
 * the pass body and every completion of its remote steps run on the controller's context
 * ({@code context}), so the bookkeeping here is confined to that one thread at a time. The bookkeeping is
 * only the leader's memory; what must survive a leader change (desired state, the serving version, a
 * failure) is in the shared maps.
 */
final class Reconciler {

  private static final Logger LOG = LoggerFactory.getLogger(Reconciler.class);
  /** An unchanged status is written again after this long, so readers see the controller is alive. */
  static final Duration STATUS_REFRESH = Duration.ofSeconds(10);

  private record Failure(long generation, String version, String reason) {
  }

  private final KilnRuntime runtime;
  private final DesiredState state;
  private final PoolLoadBoard board;
  private final PoolActions actions;
  private final HealthReports health;
  private final Autoscaler autoscaler = new Autoscaler();
  private final LongSupplier clock;
  private final Duration drainGrace;
  private final Executor context;
  private final Planner planner = new Planner();
  private final DrainingNodes drainingNodes;

  private final Map<String, Integer> targets = new HashMap<>();
  private final Map<String, Long> readySince = new HashMap<>();
  private final Map<String, Failure> failures = new HashMap<>();
  private final Map<String, String> lastScaling = new HashMap<>();
  private final Map<String, String> pendingScaling = new HashMap<>();
  private final Map<String, DeploymentStatus> written = new HashMap<>();

  Reconciler(KilnRuntime runtime, DesiredState state, PoolClient pools, PoolLoadBoard board, PoolCreator creator,
             LongSupplier clockMillis, Duration drainGrace, Executor context) {
    this.runtime = runtime;
    this.state = state;
    this.board = board;
    this.actions = new PoolActions(runtime, pools, creator, context);
    this.health = new HealthReports(pools, context);
    this.clock = clockMillis;
    this.drainGrace = drainGrace;
    this.context = context;
    this.drainingNodes = new DrainingNodes(runtime);
  }

  CompletionStage<Void> pass() {
    Set<String> alive = runtime.clusterView().aliveNodes().stream().map(NodeView::nodeId).collect(Collectors.toSet());
    return drainingNodes.among(alive).thenCompose(draining -> runtime.namedActors().thenAcceptAsync(actors -> {
      long now = clock.getAsLong();
      Observed o = Observed.of(actors, board.all(), runtime.clusterView(), draining);
      Map<String, DesiredState.Desired> desired = state.desired();
      for (DesiredState.Desired d : desired.values()) {
        try {
          if (d.deleting()) {
            delete(d, o, now);
          } else {
            reconcile(d, o, now);
          }
        } catch (RuntimeException e) {
          LOG.warn("reconciling deployment {} failed; next pass tries again", d.spec().name(), e);
        }
      }
      for (Observed.Manager m : o.managers()) {
        if (!desired.containsKey(m.deployment())) {
          actions.retire(m); // a deployment nobody wants any more (deleted while a leader died)
        }
      }
    }, context));
  }

  /** Drops all bookkeeping: the loop calls it when this node becomes the leader (again). */
  void reset() {
    targets.clear();
    readySince.clear();
    failures.clear();
    lastScaling.clear();
    pendingScaling.clear();
    written.clear();
  }

  private void reconcile(DesiredState.Desired d, Observed o, long now) {
    DeploymentSpec spec = d.spec();
    String name = spec.name();
    String version = spec.version();
    Plan.DeploymentPlan plan = planner.plan(List.of(spec), o.planView()).deployments().get(0);
    DeploymentStatus previous = Optional.ofNullable(written.get(name)).or(() -> state.status(name)).orElse(null);
    String previousServing = previous == null ? null : previous.servingVersion();
    Failure failure = failure(d, previous);

    List<PoolState> pools = new ArrayList<>();
    Set<String> wanted = new HashSet<>();
    int ready = 0;
    for (Plan.Placement p : plan.placements()) {
      String key = PoolNames.poolManager(name, version, p.nodeId());
      wanted.add(key);
      if (failure == null && pool(d, p, key, o, version.equals(previousServing), now, pools)) {
        ready++;
      }
    }
    List<Observed.Manager> stale = new ArrayList<>();
    for (Observed.Manager m : o.of(name)) {
      if (o.draining(m.node())) {
        // Its node drains to leave and closes it once idle; retired now, it would refuse requests still coming.
        o.load(m.key()).ifPresent(l -> pools.add(poolState(m.node(), l, l.totalWorkers())));
      } else if (failure != null && m.version().equals(version)) {
        actions.retire(m); // a version that failed to start goes at once; nothing routes to it
      } else if (!wanted.contains(m.key())) {
        stale.add(m);
        o.load(m.key()).ifPresent(l -> pools.add(poolState(m.node(), l, l.totalWorkers())));
      }
    }

    prune(name, wanted);
    Rollout.Outcome out = Rollout.decide(new Rollout.Facts(version, plan.placements().size(), ready,
        o.ready(name, version), previousServing, previousServing != null && o.ready(name, previousServing),
        failure == null ? null : failure.reason(),
        plan.placements().isEmpty() ? List.of(Capacity.waiting(plan)) : plan.problems(), stale.size()));
    if (out.everywhere() && !stale.isEmpty()) {
      long since = readySince.computeIfAbsent(name, n -> now);
      if (now - since >= drainGrace.toMillis()) {
        stale.forEach(actions::retire);
      }
    } else {
      readySince.remove(name); // the grace starts when the desired version serves everywhere with stale pools
      // Versions neither desired nor serving (v2 still warming when v3 came) serve nobody: retire them now.
      stale.stream().filter(m -> !m.version().equals(version) && !m.version().equals(out.serving()))
          .forEach(actions::retire);
    }
    write(new DeploymentStatus(name, version, out.serving(), out.phase(), out.message(), d.generation(), pools,
        scaling(name, version), failure == null ? null : failure.reason(), health.lastRepair(name).orElse(null), now));
  }

  /** Reconciles the desired version's pool on one selected node; true if it is ready. */
  private boolean pool(DesiredState.Desired d, Plan.Placement p, String key, Observed o, boolean served, long now,
                       List<PoolState> out) {
    DeploymentSpec spec = d.spec();
    String node = p.nodeId();
    PoolLoad load = o.load(key).orElse(null);
    int target = target(key, spec, p, load);
    if (o.manager(key).isEmpty()) {
      if (!actions.retiring(key)) {
        actions.create(spec.poolOn(node, target));
      }
      out.add(new PoolState(node, spec.version(), false, 0, target, 0, 0));
      return false;
    }
    if (load == null || load.draining()) {
      // Warming (no report yet), or still being retired after a delete that a re-apply overtook.
      out.add(new PoolState(node, spec.version(), false, 0, target, 0, 0));
      return false;
    }
    int live = Observed.live(load);
    if (load.ready()) {
      actions.ready(key);
      if (spec.autoscaling().isPresent()) {
        target = autoscale(key, spec, p, target, load, now);
      }
      actions.scale(spec.name(), spec.version(), node, target, live, now);
      health.check(spec, node, now);
    } else if (served) {
      // It served before, so its model loads: give it its dead workers back (at most every few seconds).
      actions.scale(spec.name(), spec.version(), node, target, live, now);
    } else {
      long generation = d.generation();
      actions.checkStart(spec.name(), spec.version(), node, reason -> {
        LOG.warn("deployment {} version {} failed to start on {}: {}", spec.name(), spec.version(), node, reason);
        failures.put(spec.name(), new Failure(generation, spec.version(), node + ": " + reason));
      });
    }
    if (live == 0 && !o.fits(node, spec.pool().workerResources())) {
      actions.makeRoom(spec.name(), spec.version(), node, o);
    }
    out.add(poolState(node, load, target));
    return load.ready();
  }

  /**
   * The worker count wanted on a node: the pool's count without autoscaling; with it, the autoscaler's last
   * target (a new leader starts from what runs). Never more than the node's total resources hold.
   */
  private int target(String key, DeploymentSpec spec, Plan.Placement p, PoolLoad load) {
    int hostable = Math.max(1, Math.min(p.maxWorkers(), p.fitsTotal()));
    if (spec.autoscaling().isEmpty()) {
      int fixed = Math.min(Math.max(1, p.workers()), hostable);
      targets.put(key, fixed); // remembered so that prune() forgets the pool's memory once it is not wanted
      return fixed;
    }
    AutoscalingSpec a = spec.autoscaling().get();
    int min = Math.min(Math.max(1, a.minWorkers()), hostable);
    Integer t = targets.get(key);
    if (t == null) {
      t = load != null ? Observed.live(load) : min;
    }
    t = Math.max(min, Math.min(hostable, t));
    targets.put(key, t);
    return t;
  }

  private int autoscale(String key, DeploymentSpec spec, Plan.Placement p, int target, PoolLoad load, long now) {
    int hostable = Math.max(1, Math.min(p.maxWorkers(), p.fitsTotal()));
    Autoscaler.Decision decision = autoscaler.decide(key, spec.autoscaling().get(), target, load.load(), hostable, now);
    if (decision.waiting()) {
      pendingScaling.put(key, p.nodeId() + ": " + decision.reason());
    } else {
      pendingScaling.remove(key);
    }
    if (decision.target() != target) {
      LOG.info("deployment {} on {}: {}", spec.name(), p.nodeId(), decision.reason());
      lastScaling.put(spec.name(), p.nodeId() + ": " + decision.reason());
      targets.put(key, decision.target());
    }
    return decision.target();
  }

  /** The last scaling change of a deployment, then the changes its pools wait to make. */
  private String scaling(String name, String version) {
    List<String> parts = new ArrayList<>();
    Optional.ofNullable(lastScaling.get(name)).ifPresent(parts::add);
    String prefix = PoolNames.prefix(name, version);
    pendingScaling.entrySet().stream().filter(e -> e.getKey().startsWith(prefix)).sorted(Map.Entry.comparingByKey())
        .forEach(e -> parts.add(e.getValue()));
    return parts.isEmpty() ? null : String.join("; ", parts);
  }

  /** A failure of this generation and version: seen by this leader, or recorded in the status by an earlier one. */
  private Failure failure(DesiredState.Desired d, DeploymentStatus previous) {
    String name = d.spec().name();
    Failure f = failures.get(name);
    if (f != null && f.generation() == d.generation() && f.version().equals(d.spec().version())) {
      return f;
    }
    if (previous != null && previous.phase() == Phase.FAILED && previous.generation() == d.generation()
        && d.spec().version().equals(previous.version()) && previous.failure() != null) {
      f = new Failure(d.generation(), previous.version(), previous.failure());
      failures.put(name, f);
      return f;
    }
    return null;
  }

  private void delete(DesiredState.Desired d, Observed o, long now) {
    String name = d.spec().name();
    List<Observed.Manager> mine = o.of(name);
    if (mine.isEmpty()) {
      state.forget(d).thenAcceptAsync(gone -> {
        if (gone) {
          LOG.info("deployment {} removed", name);
          forget(name);
        }
      }, context);
      return;
    }
    mine.forEach(actions::retire);
    List<PoolState> pools = new ArrayList<>();
    for (Observed.Manager m : mine) {
      o.load(m.key()).ifPresent(l -> pools.add(poolState(m.node(), l, 0)));
    }
    write(new DeploymentStatus(name, d.spec().version(), null, Phase.DELETING, "draining " + mine.size()
        + " pool(s): queued requests finish, then the pools go", d.generation(), pools, null, null, null, now));
  }

  /** Drops the scaling memory of a deployment's pools that are no longer wanted (old versions, lost nodes). */
  private void prune(String name, Set<String> wanted) {
    String prefix = PoolNames.PREFIX + name + "@";
    for (String key : new ArrayList<>(targets.keySet())) {
      if (key.startsWith(prefix) && !wanted.contains(key)) {
        targets.remove(key);
        pendingScaling.remove(key);
        autoscaler.forget(key);
        actions.forget(key);
        health.forgetPool(key);
      }
    }
  }

  private void forget(String name) {
    String prefix = PoolNames.PREFIX + name + "@";
    targets.keySet().removeIf(k -> k.startsWith(prefix));
    pendingScaling.keySet().removeIf(k -> k.startsWith(prefix));
    readySince.remove(name);
    failures.remove(name);
    lastScaling.remove(name);
    written.remove(name);
    health.forget(name);
  }

  private void write(DeploymentStatus s) {
    DeploymentStatus last = written.get(s.name());
    if (last != null && last.at(0).equals(s.at(0))
        && s.updatedAtMillis() - last.updatedAtMillis() < STATUS_REFRESH.toMillis()) {
      return;
    }
    written.put(s.name(), s);
    state.putStatus(s);
  }

  private static PoolState poolState(String node, PoolLoad l, int target) {
    return new PoolState(node, l.version(), l.ready() && !l.draining(), Observed.live(l), target, l.queueDepth(),
        l.inFlight());
  }
}
