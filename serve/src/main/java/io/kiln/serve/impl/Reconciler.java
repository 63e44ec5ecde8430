package io.kiln.serve.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import io.kiln.serve.Plan;
import io.kiln.serve.Planner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pass of the controller: makes the running pools match the desired deployments. For every selected
 * node it get-or-creates the version's pool manager (named, so a pass repeated by a new leader never
 * deploys twice), tops workers up to the (autoscaled) target, switches the serving version once the new
 * version is ready on every selected node, drains the old version after a grace period, retires pools of
 * deleted deployments, and records what it saw as {@link DeploymentStatus}.
 *
 * <p>Threading: {@link #pass()} must not overlap itself (the controller serialises passes); it never
 * blocks, every remote step is asynchronous and its result is seen by a later pass. Its bookkeeping is in
 * concurrent maps because those asynchronous steps complete on other threads.
 */
final class Reconciler {

  private static final Logger LOG = LoggerFactory.getLogger(Reconciler.class);

  private final KilnRuntime runtime;
  private final DesiredState state;
  private final PoolClient pools;
  private final PoolLoadBoard board;
  private final Autoscaler autoscaler;
  private final LongSupplier clockMillis;
  private final Duration drainGrace;
  private final Planner planner = new Planner();

  /** Pools with a creation, scale, drain or status call in flight: not touched again until it answers. */
  private final Set<String> busy = ConcurrentHashMap.newKeySet();
  private final Map<String, Integer> targets = new ConcurrentHashMap<>();
  private final Map<String, Long> switchedAt = new ConcurrentHashMap<>();
  private final Map<String, String> failures = new ConcurrentHashMap<>();
  private final Map<String, Long> failedGeneration = new ConcurrentHashMap<>();
  private final Map<String, String> lastScaling = new ConcurrentHashMap<>();

  Reconciler(KilnRuntime runtime, DesiredState state, PoolClient pools, PoolLoadBoard board, Autoscaler autoscaler,
             LongSupplier clockMillis, Duration drainGrace) {
    this.runtime = runtime;
    this.state = state;
    this.pools = pools;
    this.board = board;
    this.autoscaler = autoscaler;
    this.clockMillis = clockMillis;
    this.drainGrace = drainGrace;
  }

  /** A pool manager found in the registry. */
  private record Manager(String deployment, String version, String node, ActorState state) {
    String key() {
      return PoolNames.poolManager(deployment, version, node);
    }
  }

  CompletionStage<Void> pass() {
    return runtime.namedActors().thenAccept(actors -> {
      List<Manager> managers = managers(actors);
      Map<String, PoolLoad> loads = new HashMap<>();
      for (PoolLoad l : board.all()) {
        loads.put(PoolNames.poolManager(l.deployment(), l.version(), l.nodeId()), l);
      }
      var desired = state.desired();
      for (var d : desired.values()) {
        List<Manager> mine = managers.stream().filter(m -> m.deployment().equals(d.spec().name())).toList();
        if (d.deleting()) {
          delete(d, mine, loads);
        } else {
          reconcile(d, mine, loads);
        }
      }
      for (Manager m : managers) {
        if (!desired.containsKey(m.deployment())) {
          retire(m); // a deployment nobody wants any more (e.g. deleted while a leader died)
        }
      }
    });
  }

  private static List<Manager> managers(List<ActorInfo> actors) {
    List<Manager> out = new ArrayList<>();
    for (ActorInfo a : actors) {
      if (!PoolManager.NAMESPACE.equals(a.namespace()) || a.name() == null || a.state() == ActorState.DEAD) {
        continue;
      }
      PoolNames.parse(a.name()).filter(PoolNames.Parsed::isManager)
          .ifPresent(p -> out.add(new Manager(p.name(), p.version(), p.nodeId(), a.state())));
    }
    return out;
  }

  private void reconcile(DesiredState.Desired d, List<Manager> mine, Map<String, PoolLoad> loads) {
    DeploymentSpec spec = d.spec();
    String name = spec.name();
    long now = clockMillis.getAsLong();
    Plan.DeploymentPlan plan = planner.plan(List.of(spec), runtime.clusterView()).deployments().get(0);
    List<Plan.Placement> placements = plan.placements();
    boolean failed = Long.valueOf(d.generation()).equals(failedGeneration.get(name));

    List<DeploymentStatus.PoolState> poolStates = new ArrayList<>();
    boolean readyEverywhere = !placements.isEmpty() && !failed;
    for (Plan.Placement p : placements) {
      String key = PoolNames.poolManager(name, spec.version(), p.nodeId());
      PoolLoad load = loads.get(key);
      boolean exists = mine.stream().anyMatch(m -> m.key().equals(key));
      int target = targets.computeIfAbsent(key, k -> Math.max(1, p.workers()));
      if (failed) {
        continue;
      }
      if (!exists && load == null) {
        create(key, spec, p.nodeId(), target);
        readyEverywhere = false;
        continue;
      }
      if (load == null) {
        readyEverywhere = false; // created, its first load report not in yet
        continue;
      }
      int live = load.idleWorkers() + load.busyWorkers();
      if (spec.autoscaling().isPresent() && load.ready()) {
        Autoscaler.Decision decision = autoscaler.decide(key, spec.autoscaling().get(), live,
            load.load(), p.fitsTotal(), now);
        if (decision.target() != target) {
          targets.put(key, decision.target());
          target = decision.target();
          lastScaling.put(name, p.nodeId() + ": " + decision.reason());
        }
      }
      if (live != target && !load.draining()) {
        scale(key, name, spec.version(), p.nodeId(), target);
        if (live == 0) {
          makeRoom(name, spec.version(), p.nodeId(), loads);
        }
      }
      if (!load.ready()) {
        readyEverywhere = false;
        checkFailed(key, d, p.nodeId());
      }
      poolStates.add(new DeploymentStatus.PoolState(p.nodeId(), spec.version(), load.ready(), live, target,
          load.queueDepth(), load.inFlight()));
    }

    List<Manager> old = mine.stream().filter(m -> !m.version().equals(spec.version())).toList();
    for (Manager m : old) {
      PoolLoad l = loads.get(m.key());
      if (l != null) {
        poolStates.add(new DeploymentStatus.PoolState(m.node(), m.version(), l.ready(), l.idleWorkers() + l.busyWorkers(),
            l.totalWorkers(), l.queueDepth(), l.inFlight()));
      }
    }

    DeploymentStatus previous = state.status(name).orElse(null);
    String serving;
    Phase phase;
    String message;
    if (readyEverywhere) {
      serving = spec.version();
      phase = Phase.READY;
      message = old.isEmpty() ? "serving on " + placements.size() + " node(s)" : "draining the previous version";
      if (!old.isEmpty()) {
        long since = switchedAt.computeIfAbsent(name, n -> now);
        if (now - since >= drainGrace.toMillis()) {
          old.forEach(this::retire);
        }
      }
    } else {
      switchedAt.remove(name);
      serving = servingOld(previous, old, loads);
      if (failed) {
        phase = Phase.FAILED;
        message = "version " + spec.version() + " failed to start: " + failures.get(name)
            + (serving != null ? "; version " + serving + " keeps serving" : "");
      } else if (placements.isEmpty()) {
        phase = Phase.UNSCHEDULABLE;
        message = String.join("; ", plan.problems());
      } else {
        phase = serving != null ? Phase.ROLLING : Phase.DEPLOYING;
        message = "warming version " + spec.version() + (serving != null ? "; version " + serving + " serves" : "");
      }
    }
    state.putStatus(new DeploymentStatus(name, spec.version(), serving, phase, message, d.generation(), poolStates,
        lastScaling.get(name), System.currentTimeMillis()));
  }

  /** The version that keeps serving while the desired one is not ready: the previous one, if still ready. */
  private static String servingOld(DeploymentStatus previous, List<Manager> old, Map<String, PoolLoad> loads) {
    if (previous == null || previous.servingVersion() == null) {
      return null;
    }
    String v = previous.servingVersion();
    boolean stillReady = old.stream().anyMatch(m -> m.version().equals(v) && loads.containsKey(m.key())
        && loads.get(m.key()).ready());
    return stillReady ? v : null;
  }

  private void create(String key, DeploymentSpec spec, String node, int workers) {
    if (!busy.add(key)) {
      return;
    }
    LOG.info("creating pool {} with {} worker(s)", key, workers);
    PoolManager.getOrCreate(runtime, PoolSpecs.pool(spec, node, workers)).whenComplete((h, err) -> {
      busy.remove(key);
      if (err != null) {
        LOG.warn("creating pool {} failed: {}", key, err.toString());
      }
    });
  }

  private void scale(String key, String deployment, String version, String node, int target) {
    if (!busy.add(key)) {
      return;
    }
    pools.scale(deployment, version, node, target).whenComplete((n, err) -> {
      busy.remove(key);
      if (err != null) {
        LOG.debug("scaling pool {} failed: {}", key, err.toString());
      }
    });
  }

  /**
   * A new version's pool got no worker (its node's resources are held by the old version): give it room
   * by shrinking the old pool on that node by one worker, never below one.
   */
  private void makeRoom(String deployment, String version, String node, Map<String, PoolLoad> loads) {
    for (PoolLoad l : loads.values()) {
      int live = l.idleWorkers() + l.busyWorkers();
      if (l.deployment().equals(deployment) && !l.version().equals(version) && l.nodeId().equals(node) && live > 1) {
        scale(PoolNames.poolManager(deployment, l.version(), node), deployment, l.version(), node, live - 1);
      }
    }
  }

  /** A pool whose every worker is DEAD (model failed to load, restarts used up) fails its version. */
  private void checkFailed(String key, DesiredState.Desired d, String node) {
    String statusKey = key + "#status";
    if (!busy.add(statusKey)) {
      return;
    }
    String name = d.spec().name();
    pools.status(name, d.spec().version(), node).whenComplete((st, err) -> {
      busy.remove(statusKey);
      if (st == null || st.workers().isEmpty()) {
        return;
      }
      boolean allDead = st.workers().stream().allMatch(w -> w.state() == WorkerState.DEAD);
      if (allDead) {
        String reason = st.workers().stream().map(WorkerStatus::lastError).filter(e -> e != null).findFirst()
            .orElse("every worker died");
        LOG.warn("deployment {} version {} failed on {}: {}", name, d.spec().version(), node, reason);
        failures.put(name, reason);
        failedGeneration.put(name, d.generation());
        retireVersion(name, d.spec().version());
      }
    });
  }

  private void retireVersion(String deployment, String version) {
    runtime.namedActors().thenAccept(actors -> managers(actors).stream()
        .filter(m -> m.deployment().equals(deployment) && m.version().equals(version))
        .forEach(this::retire));
  }

  private void delete(DesiredState.Desired d, List<Manager> mine, Map<String, PoolLoad> loads) {
    String name = d.spec().name();
    if (mine.isEmpty()) {
      LOG.info("deployment {} removed", name);
      targets.keySet().removeIf(k -> k.startsWith(PoolNames.prefix(name, d.spec().version())));
      state.forget(name);
      return;
    }
    mine.forEach(this::retire);
    state.putStatus(new DeploymentStatus(name, d.spec().version(), null, Phase.DELETING,
        "draining " + mine.size() + " pool(s)", d.generation(), List.of(), null, System.currentTimeMillis()));
  }

  /** Drains a pool (queued and running requests finish), then kills its manager. */
  private void retire(Manager m) {
    String key = m.key() + "#retire";
    if (!busy.add(key)) {
      return;
    }
    LOG.info("retiring pool {}", m.key());
    targets.remove(m.key());
    autoscaler.forget(m.key());
    pools.drain(m.deployment(), m.version(), m.node())
        .exceptionally(err -> null)
        .thenCompose(v -> runtime.getActor(PoolManager.NAMESPACE, m.key(), PoolManager.class))
        .thenCompose(h -> runtime.kill(h, false))
        .whenComplete((v, err) -> busy.remove(key));
  }

  /** For tests: whether anything is still in flight. */
  boolean idle() {
    return busy.isEmpty();
  }

}
