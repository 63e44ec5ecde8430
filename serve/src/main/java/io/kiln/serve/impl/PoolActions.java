package io.kiln.serve.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.kiln.runtime.KilnRuntime;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's remote steps on pools: create, scale, make room, check for a failed start, retire. Each
 * is fire-and-forget: it starts the step and returns; a later pass sees the result. A pool with a step of
 * the same kind in flight is not touched again until it answered, so a slow step is never piled onto.
 *
 * <p>Threading: every method, and every completion, runs on the controller's context ({@code context}).
 */
final class PoolActions {

  private static final Logger LOG = LoggerFactory.getLogger(PoolActions.class);
  /** A pool asked for a worker count it did not reach is asked again this often (resources may have freed). */
  static final Duration RETRY_SCALE = Duration.ofSeconds(10);

  private record Scaled(int target, long atMillis) {
  }

  private final KilnRuntime runtime;
  private final PoolClient pools;
  private final PoolCreator creator;
  private final Executor context;
  private final Set<String> busy = new HashSet<>();
  private final Map<String, Scaled> scaled = new HashMap<>();
  private final Set<String> madeRoom = new HashSet<>();

  PoolActions(KilnRuntime runtime, PoolClient pools, PoolCreator creator, Executor context) {
    this.runtime = runtime;
    this.pools = pools;
    this.creator = creator;
    this.context = context;
  }

  /** Get-or-creates the manager of {@code spec} from its own node (see {@link PoolCreator}). */
  void create(PoolSpec spec) {
    String key = spec.managerName();
    if (!busy.add(key + "#create")) {
      return;
    }
    LOG.info("creating pool {} with {} worker(s)", key, spec.workers());
    creator.create(spec).whenCompleteAsync((id, err) -> {
      busy.remove(key + "#create");
      if (err != null) {
        LOG.warn("creating pool {} failed: {}", key, err.toString());
      }
    }, context);
  }

  /**
   * Scales the pool to {@code target} workers unless it has that many live ones; the same target is asked
   * for again only after {@link #RETRY_SCALE} (the pool adds what fits and starts the rest later on ask).
   */
  void scale(String name, String version, String node, int target, int live, long nowMillis) {
    String key = PoolNames.poolManager(name, version, node);
    Scaled last = scaled.get(key);
    if (live == target) {
      return;
    }
    if (last != null && last.target() == target && nowMillis - last.atMillis() < RETRY_SCALE.toMillis()) {
      return;
    }
    if (!busy.add(key + "#scale")) {
      return;
    }
    scaled.put(key, new Scaled(target, nowMillis));
    pools.scale(name, version, node, target).whenCompleteAsync((n, err) -> {
      busy.remove(key + "#scale");
      if (err != null) {
        LOG.debug("scaling pool {} to {} failed: {}", key, target, err.toString());
        scaled.remove(key);
      } else if (n < target) {
        LOG.info("pool {} has {} of {} workers: the node holds no more now", key, n, target);
      }
    }, context);
  }

  /**
   * A new version's pool on {@code node} has no live worker and no room for one, the node's resources
   * being held by another version of the deployment: shrink the largest such pool by one worker (never
   * below one, so it keeps serving), once per new pool until that pool is ready. Assumes the versions'
   * workers need the same resources.
   */
  void makeRoom(String name, String version, String node, Observed o) {
    String key = PoolNames.poolManager(name, version, node);
    if (!madeRoom.add(key)) {
      return;
    }
    o.loads().values().stream()
        .filter(l -> l.deployment().equals(name) && !l.version().equals(version) && l.nodeId().equals(node)
            && !l.draining() && Observed.live(l) > 1)
        .max((a, b) -> Integer.compare(Observed.live(a), Observed.live(b)))
        .ifPresentOrElse(old -> {
          LOG.info("pool {} waits for resources: shrinking {}@{} on {} to {} workers", key, name, old.version(), node,
              Observed.live(old) - 1);
          pools.scale(name, old.version(), node, Observed.live(old) - 1)
              .whenCompleteAsync((n, err) -> scaled.remove(PoolNames.poolManager(name, old.version(), node)), context);
        }, () -> madeRoom.remove(key));
  }

  /** The pool is ready: a later rollout onto its node may make room again. */
  void ready(String key) {
    madeRoom.remove(key);
  }

  /**
   * Asks a pool that is not ready whether every worker is dead (its model did not load, restarts used up);
   * if so, tells {@code failed} the first worker error.
   */
  void checkStart(String name, String version, String node, Consumer<String> failed) {
    String key = PoolNames.poolManager(name, version, node) + "#status";
    if (!busy.add(key)) {
      return;
    }
    pools.status(name, version, node).whenCompleteAsync((st, err) -> {
      busy.remove(key);
      if (st == null || st.draining() || st.workers().isEmpty()
          || !st.workers().stream().allMatch(w -> w.state() == WorkerState.DEAD)) {
        return;
      }
      failed.accept(st.workers().stream().map(WorkerStatus::lastError).filter(Objects::nonNull).findFirst()
          .orElse("every worker died"));
    }, context);
  }

  /** Drains a pool (refuses new requests, finishes queued and running ones), then kills its manager. */
  void retire(Observed.Manager m) {
    String key = m.key();
    if (!busy.add(key + "#retire")) {
      return;
    }
    LOG.info("retiring pool {}", key);
    scaled.remove(key);
    madeRoom.remove(key);
    pools.drain(m.deployment(), m.version(), m.node())
        .exceptionally(err -> null)
        .thenCompose(v -> runtime.getActor(PoolManager.NAMESPACE, key, PoolManager.class))
        .thenCompose(h -> runtime.kill(h, false))
        .whenCompleteAsync((v, err) -> {
          busy.remove(key + "#retire");
          if (err != null) {
            LOG.debug("retiring pool {}: {}", key, err.toString());
          }
        }, context);
  }

  /** Whether a step is in flight for the pool (a retiring pool counts until its manager is gone). */
  boolean retiring(String key) {
    return busy.contains(key + "#retire");
  }

  /** Forgets the bookkeeping of a pool that is gone. */
  void forget(String key) {
    scaled.remove(key);
    madeRoom.remove(key);
  }
}
