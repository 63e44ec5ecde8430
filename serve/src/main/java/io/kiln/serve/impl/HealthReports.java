package io.kiln.serve.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolNames;
import io.kiln.serve.DeploymentSpec;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executor;

/**
 * What the pools' own health checks did, for the deployments' status: every {@code health.period_ms} of
 * the controller's clock it reads each ready pool's status and keeps the last repair it reports (a stuck
 * worker restarted). Probing and restarting are the pool manager's (see {@code io.kiln.pools.PoolManager});
 * serve only reports them. Threading: the controller's context only.
 */
final class HealthReports {

  private final PoolClient pools;
  private final Executor context;
  private final Map<String, Long> lastCheck = new HashMap<>();
  private final Set<String> checking = new HashSet<>();
  private final Map<String, String> lastRepair = new HashMap<>();

  HealthReports(PoolClient pools, Executor context) {
    this.pools = pools;
    this.context = context;
  }

  /** Reads the pool of {@code spec} on {@code node} if its period has passed since the last read. */
  void check(DeploymentSpec spec, String node, long nowMillis) {
    String key = PoolNames.poolManager(spec.name(), spec.version(), node);
    Long last = lastCheck.putIfAbsent(key, nowMillis);
    if (last == null || nowMillis - last < spec.health().period().toMillis() || !checking.add(key)) {
      return;
    }
    lastCheck.put(key, nowMillis);
    pools.status(spec.name(), spec.version(), node).whenCompleteAsync((st, err) -> {
      checking.remove(key);
      if (st != null && st.lastRepair() != null) {
        lastRepair.put(spec.name(), st.lastRepair());
      }
    }, context);
  }

  /** The last repair made in {@code deployment}'s pools, for its status. */
  Optional<String> lastRepair(String deployment) {
    return Optional.ofNullable(lastRepair.get(deployment));
  }

  /** Forgets a pool that is no longer wanted. */
  void forgetPool(String key) {
    lastCheck.remove(key);
  }

  /** Forgets everything about a deployment that is gone. */
  void forget(String deployment) {
    lastRepair.remove(deployment);
    String prefix = PoolNames.PREFIX + deployment + "@";
    lastCheck.keySet().removeIf(k -> k.startsWith(prefix));
  }
}
