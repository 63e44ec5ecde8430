package io.kiln.serve.impl;

import io.kiln.pools.ModelWorker;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.DeploymentSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Health checks of ready pools' workers, every {@code health.period_ms} of the controller's clock: each
 * worker in rotation gets a call on the path it serves by (its actor's one serial thread, behind whatever
 * batch it runs), which must answer within {@code health.timeout_ms}. A worker that does not is stuck (a
 * hung model call, a deadlock): it is killed with restart allowed, which fails the batch it holds (its
 * manager re-queues those requests onto other workers once) and reloads its model, under the pool's
 * {@code max_restarts}.
 *
 * <p>The model-pools manager would notice a hung batch itself only after its call timeout (at least a
 * minute); this bounds it by the deployment's health timeout. Threading: the controller's context only.
 */
final class HealthChecker {

  private static final Logger LOG = LoggerFactory.getLogger(HealthChecker.class);

  private final KilnRuntime runtime;
  private final PoolClient pools;
  private final Executor context;
  private final Map<String, Long> lastCheck = new HashMap<>();
  private final Set<String> checking = new HashSet<>();
  private final Map<String, String> lastRepair = new HashMap<>();

  HealthChecker(KilnRuntime runtime, PoolClient pools, Executor context) {
    this.runtime = runtime;
    this.pools = pools;
    this.context = context;
  }

  /** Checks the pool of {@code spec} on {@code node} if its period has passed since the last check. */
  void check(DeploymentSpec spec, String node, long nowMillis) {
    String key = PoolNames.poolManager(spec.name(), spec.version(), node);
    Long last = lastCheck.putIfAbsent(key, nowMillis);
    if (last == null || nowMillis - last < spec.health().period().toMillis() || !checking.add(key)) {
      return;
    }
    lastCheck.put(key, nowMillis);
    pools.status(spec.name(), spec.version(), node).whenCompleteAsync((st, err) -> {
      if (st == null || st.draining()) {
        checking.remove(key);
        return;
      }
      List<CompletableFuture<Void>> probes = new ArrayList<>();
      for (WorkerStatus w : st.workers()) {
        if (w.state() == WorkerState.READY) {
          probes.add(probe(spec, node, w));
        }
      }
      CompletableFuture.allOf(probes.toArray(CompletableFuture[]::new))
          .whenCompleteAsync((v, e) -> checking.remove(key), context);
    }, context);
  }

  private CompletableFuture<Void> probe(DeploymentSpec spec, String node, WorkerStatus w) {
    Duration timeout = spec.health().timeout();
    return runtime.getActor(PoolManager.NAMESPACE, w.name(), ModelWorker.class)
        .thenCompose(h -> h.withTimeout(timeout).call(ModelWorker::loadInfo)
            .handleAsync((info, err) -> {
              if (unwrap(err) instanceof CallTimeoutException) {
                replace(spec, node, w, h, timeout);
              }
              return (Void) null;
            }, context))
        .exceptionally(err -> null) // gone or restarting: its manager deals with it
        .toCompletableFuture();
  }

  private void replace(DeploymentSpec spec, String node, WorkerStatus w, ActorHandle<ModelWorker> h, Duration timeout) {
    String what = "restarted stuck worker " + w.name() + ": no answer to a health check within " + timeout.toMillis()
        + " ms";
    LOG.warn("deployment {}: {}", spec.name(), what);
    lastRepair.put(spec.name(), what);
    runtime.kill(h, true).whenComplete((v, err) -> {
      if (err != null) {
        LOG.debug("restarting worker {} failed: {}", w.name(), err.toString());
      }
    });
  }

  /** The last repair made in {@code deployment}, for its status. */
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

  private static Throwable unwrap(Throwable t) {
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
