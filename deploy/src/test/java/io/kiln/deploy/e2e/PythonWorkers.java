package io.kiln.deploy.e2e;

import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolStatus;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.micrometer.core.instrument.Counter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Helpers of the engine fault scenarios: the Python processes of a pool's workers (children of this JVM, found
 * by the worker name {@code kiln_worker.py} is started with), model folders written by the test, and the pool's
 * state as its manager and the node's meters report it.
 */
final class PythonWorkers {

  private PythonWorkers() {
  }

  /** The live Python process of worker {@code index} of {@code deployment}'s pool on {@code node}, if any. */
  static Optional<ProcessHandle> process(String deployment, String node, int index) {
    String label = PoolNames.worker(deployment, "1", node, index);
    return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
        .filter(p -> p.info().arguments().map(a -> a.length > 0 && a[a.length - 1].equals(label)
            && String.join(" ", a).contains("kiln_worker.py")).orElse(false))
        .findFirst();
  }

  /** Writes {@code model.py} into a new folder under {@code parent} and returns the folder. */
  static Path modelFolder(Path parent, String name, String modelPy) {
    try {
      Path dir = Files.createDirectories(parent.resolve(name));
      Files.writeString(dir.resolve("model.py"), modelPy);
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static PoolStatus status(ServingCluster cluster, String deployment, String node) {
    return ServingCluster.join(cluster.node(node).pools().status(deployment, "1", node));
  }

  /** Whether all {@code workers} of the pool are READY. */
  static boolean whole(ServingCluster cluster, String deployment, String node, int workers) {
    PoolStatus s = status(cluster, deployment, node);
    return s.count(WorkerState.READY) == workers;
  }

  static long restarts(ServingCluster cluster, String deployment, String node) {
    return status(cluster, deployment, node).workers().stream().mapToLong(WorkerStatus::restarts).sum();
  }

  static List<WorkerStatus> workers(ServingCluster cluster, String deployment, String node) {
    return status(cluster, deployment, node).workers();
  }

  /** {@code kiln.pool.worker.restarts} of {@code deployment} on {@code node}: what /metrics exports. */
  static double restartsMetric(ServingCluster cluster, String deployment, String node) {
    return cluster.node(node).registry().find("kiln.pool.worker.restarts").tag("deployment", deployment)
        .counters().stream().mapToDouble(Counter::count).sum();
  }

  /** {@code kiln.pool.worker.loads} of {@code deployment} on {@code node}. */
  static double loadsMetric(ServingCluster cluster, String deployment, String node) {
    return cluster.node(node).registry().find("kiln.pool.worker.loads").tag("deployment", deployment)
        .counters().stream().mapToDouble(Counter::count).sum();
  }
}
