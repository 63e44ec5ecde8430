package io.kiln.serve;

import static io.kiln.serve.Specs.onlyProblem;
import static io.kiln.serve.Specs.problems;
import static io.kiln.serve.Specs.withPool;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.HealthSpec;
import io.kiln.runtime.Resources;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Problems in pool, batching, queue, autoscaling and health; the pool starts at line 9. */
class PoolValidationTest {

  @Test
  void exactlyOneOfWorkersPerNodeAndPerGpu() {
    onlyProblem(withPool("""
            pool:
              workers_per_node: 2
              per_gpu: 1
              worker_resources: {GPU: 1}
        """), 11, 7, "deployments[0].pool.per_gpu", "set either workers_per_node or per_gpu, not both");
    onlyProblem(withPool("""
            pool:
              worker_resources: {CPU: 1}
        """), 10, 7, "deployments[0].pool.workers_per_node",
        "one of workers_per_node, per_gpu or num_workers is required (or an autoscaling section)");
    // Without a pool section at all, the deployment's own mapping is the place.
    onlyProblem(withPool(""), 2, 5, "deployments[0].pool.workers_per_node", "one of workers_per_node, per_gpu or num_workers");
  }

  @Test
  void numWorkersIsAClusterWideTotalExclusiveWithPerNodeCounts() {
    DeploymentSpec total = Specs.single(withPool("    pool: {num_workers: 5}\n"));
    assertThat(total.pool().workers()).isEqualTo(new PoolPlacement.Total(5));
    // The desired state is stored as JSON: the total survives it.
    assertThat(SpecJson.toJson(total)).contains("\"num_workers\":5");
    assertThat(SpecJson.fromJson(SpecJson.toJson(total))).isEqualTo(total);
    onlyProblem(withPool("""
            pool:
              workers_per_node: 2
              num_workers: 6
        """), 11, 7, "deployments[0].pool.num_workers",
        "set either num_workers (a cluster-wide total) or workers_per_node (per node), not both");
    onlyProblem(withPool("""
            pool:
              num_workers: 6
              per_gpu: 1
              worker_resources: {GPU: 1}
        """), 10, 7, "deployments[0].pool.num_workers",
        "set either num_workers (a cluster-wide total) or per_gpu (per node), not both");
    onlyProblem(withPool("    pool: {num_workers: 4}\n    autoscaling: {max_workers: 2}\n"), 9, 12,
        "deployments[0].pool.num_workers", "num_workers (a cluster-wide total) does not combine with autoscaling");
    onlyProblem(withPool("    pool: {num_workers: 0}\n"), 9, 25, "deployments[0].pool.num_workers",
        "must be at least 1, got 0");
  }

  @Test
  void aSectionOfTheWrongTypeIsOneProblem() {
    onlyProblem(withPool("    pool: 5\n"), 9, 11, "deployments[0].pool", "expected a mapping, got the number 5");
    onlyProblem(withPool("    pool: {workers_per_node: 1}\n    autoscaling: [1, 4]\n"), 10, 18,
        "deployments[0].autoscaling", "expected a mapping, got a list");
  }

  @Test
  void zeroAndNegativeCounts() {
    onlyProblem(withPool("    pool: {workers_per_node: 0}\n"), 9, 30, "deployments[0].pool.workers_per_node",
        "must be at least 1, got 0");
    onlyProblem(withPool("    pool: {per_gpu: -1, worker_resources: {GPU: 1}}\n"), 9, 21, "deployments[0].pool.per_gpu",
        "must be at least 1, got -1");
    onlyProblem(withPool("    pool: {workers_per_node: 1, max_restarts: -2}\n"), 9, 47,
        "deployments[0].pool.max_restarts", "must be at least -1, got -2");
    assertThat(Specs.single(withPool("    pool: {workers_per_node: 1, max_restarts: -1}\n")).pool().maxRestarts())
        .isEqualTo(-1);
  }

  @Test
  void invalidResourcesUseResourcesOwnWords() {
    onlyProblem(withPool("    pool: {workers_per_node: 1, worker_resources: {CPU: -1}}\n"), 9, 57,
        "deployments[0].pool.worker_resources.CPU", "resource CPU must be a finite non-negative number, got -1.0");
    onlyProblem(withPool("    pool: {workers_per_node: 1, worker_resources: {GPU: 1.5}}\n"), 9, 57,
        "deployments[0].pool.worker_resources.GPU", "GPU above 1 must be a whole number, got 1.5");
    onlyProblem(withPool("    pool: {workers_per_node: 1, worker_resources: {CPU: 0.00001}}\n"), 9, 57,
        "deployments[0].pool.worker_resources.CPU", "resource CPU has more precision than 1e-4");
    onlyProblem(withPool("    pool: {workers_per_node: 1, worker_resources: {CPU: lots}}\n"), 9, 57,
        "deployments[0].pool.worker_resources.CPU", "expected a number, got a string 'lots'");
    onlyProblem(withPool("    pool: {workers_per_node: 1, worker_resources: {cpu: 1}}\n"), 9, 52,
        "deployments[0].pool.worker_resources.cpu", "unknown resource 'cpu'; did you mean 'CPU'? (resource names are case-sensitive)");
    var pool = Specs.single(withPool(
        "    pool: {workers_per_node: 1, worker_resources: {CPU: 0.5, GPU: 0.25, memory: 1000, step_a_slot: 1}}\n")).pool();
    assertThat(pool.workerResources())
        .isEqualTo(Resources.cpu(0.5).withGpu(0.25).withMemory(1000).with("step_a_slot", 1));
  }

  @Test
  void perGpuWorkersMustShareAGpu() {
    onlyProblem(withPool("    pool: {per_gpu: 1, worker_resources: {CPU: 1}}\n"), 9, 42,
        "deployments[0].pool.worker_resources", "per_gpu needs worker_resources to ask for a GPU share, e.g. {GPU: 1}");
    onlyProblem(withPool("    pool: {per_gpu: 2, worker_resources: {GPU: 1}}\n"), 9, 48,
        "deployments[0].pool.worker_resources",
        "per_gpu: 2 workers each asking GPU: 1 cannot share one GPU; ask for at most GPU: 0.5");
    onlyProblem(withPool("    pool: {per_gpu: 2}\n"), 9, 12, "deployments[0].pool.worker_resources",
        "per_gpu needs worker_resources to ask for a GPU share");
    var pool = Specs.single(withPool("    pool: {per_gpu: 2, worker_resources: {GPU: 0.5, CPU: 1}}\n")).pool();
    assertThat(pool.workers()).isEqualTo(new PoolPlacement.PerGpu(2));
  }

  @Test
  void nodeSelectorLabelsAreStrings() {
    var pool = Specs.single(withPool("    pool: {workers_per_node: 1, node_selector: {zone: a, gpu: true, rack: 7}}\n"))
        .pool();
    assertThat(pool.nodeSelector()).containsExactlyInAnyOrderEntriesOf(
        java.util.Map.of("zone", "a", "gpu", "true", "rack", "7"));
    onlyProblem(withPool("    pool: {workers_per_node: 1, node_selector: {zone: [a, b]}}\n"), 9, 55,
        "deployments[0].pool.node_selector.zone", "expected a string, got a list");
  }

  @Test
  void batchSizeBetweenOneAndTheQueue() {
    String pool = "    pool: {workers_per_node: 1}\n";
    onlyProblem(withPool(pool + "    batching: {max_batch_size: 0}\n"), 10, 32,
        "deployments[0].batching.max_batch_size", "must be at least 1, got 0");
    onlyProblem(withPool(pool + "    batching: {max_batch_size: 64}\n    queue: {max_queued: 32}\n"), 10, 32,
        "deployments[0].batching.max_batch_size", "max_batch_size 64 exceeds queue.max_queued 32: a batch could never fill");
    onlyProblem(withPool(pool + "    batching: {max_batch_size: 1024}\n"), 10, 32,
        "deployments[0].batching.max_batch_size", "max_batch_size 1024 exceeds queue.max_queued 512");
  }

  @Test
  void negativeDelaysAndTimeouts() {
    String pool = "    pool: {workers_per_node: 1}\n";
    onlyProblem(withPool(pool + "    batching: {max_batch_delay_ms: -1}\n"), 10, 36,
        "deployments[0].batching.max_batch_delay_ms", "must not be negative, got -1");
    onlyProblem(withPool(pool + "    queue: {timeout_ms: 0}\n"), 10, 25,
        "deployments[0].queue.timeout_ms", "must be greater than 0, got 0");
    onlyProblem(withPool(pool + "    queue: {timeout_ms: -30000}\n"), 10, 25,
        "deployments[0].queue.timeout_ms", "must not be negative, got -30000");
    onlyProblem(withPool(pool + "    queue: {timeout_ms: 100000000}\n"), 10, 25,
        "deployments[0].queue.timeout_ms", "must be at most 86400000 (one day), got 100000000");
    onlyProblem(withPool(pool + "    autoscaling: {max_workers: 1, downscale_delay_ms: -5}\n"), 10, 55,
        "deployments[0].autoscaling.downscale_delay_ms", "must not be negative, got -5");
    var spec = Specs.single(withPool(pool + "    batching: {max_batch_size: 4, max_batch_delay_ms: 0.5}\n"));
    assertThat(spec.batching().maxBatchDelay()).isEqualTo(Duration.ofMillis(1).dividedBy(2));
  }

  @Test
  void autoscalingBounds() {
    onlyProblem(withPool("    autoscaling: {min_workers: 3, max_workers: 2}\n"), 9, 32,
        "deployments[0].autoscaling.min_workers", "min_workers 3 exceeds max_workers 2");
    onlyProblem(withPool("    autoscaling: {max_workers: 0}\n"), 9, 32,
        "deployments[0].autoscaling.max_workers", "must be at least 1, got 0");
    onlyProblem(withPool("    autoscaling: {min_workers: 1}\n"), 9, 18,
        "deployments[0].autoscaling.max_workers", "missing required field 'max_workers'");
    onlyProblem(withPool("    autoscaling: {max_workers: 2, target_ongoing_per_worker: 0}\n"), 9, 62,
        "deployments[0].autoscaling.target_ongoing_per_worker", "must be a number greater than 0, got 0.0");
    onlyProblem(withPool("    pool: {workers_per_node: 2}\n    autoscaling: {min_workers: 3, max_workers: 4}\n"),
        10, 32, "deployments[0].autoscaling.min_workers", "min_workers 3 exceeds pool.workers_per_node 2");
  }

  @Test
  void autoscalingWithoutACountScalesWithinItsBounds() {
    var spec = Specs.single(withPool("    autoscaling: {min_workers: 0, max_workers: 4}\n"));
    assertThat(spec.pool().workers()).isEqualTo(new PoolPlacement.PerNode(4));
    assertThat(spec.autoscaling()).contains(new AutoscalingSpec(0, 4,
        AutoscalingSpec.DEFAULT_TARGET_ONGOING_PER_WORKER, AutoscalingSpec.DEFAULT_UPSCALE_DELAY,
        AutoscalingSpec.DEFAULT_DOWNSCALE_DELAY));
  }

  @Test
  void healthTimeoutWithinPeriod() {
    String pool = "    pool: {workers_per_node: 1}\n";
    onlyProblem(withPool(pool + "    health: {period_ms: 1000, timeout_ms: 2000}\n"), 10, 43,
        "deployments[0].health.timeout_ms", "timeout_ms 2000 exceeds period_ms 1000");
    onlyProblem(withPool(pool + "    health: {period_ms: 0}\n"), 10, 25,
        "deployments[0].health.period_ms", "must be greater than 0, got 0");
    // A short period without a timeout gets a timeout that fits.
    var spec = Specs.single(withPool(pool + "    health: {period_ms: 2000}\n"));
    assertThat(spec.health()).isEqualTo(new HealthSpec(Duration.ofSeconds(2), Duration.ofSeconds(2)));
  }

  @Test
  void everySectionReportsItsUnknownFields() {
    var problems = problems(withPool("""
            pool: {workers_per_node: 1, worker: 1}
            batching: {max_batch: 8}
            queue: {max_queue: 8}
            autoscaling: {max_workers: 2, min_worker: 1}
            health: {period: 10}
        """));
    assertThat(problems).extracting(Problem::message).containsExactly(
        "unknown field 'worker'; expected one of: workers_per_node, per_gpu, num_workers, worker_resources, node_selector, max_restarts, wait_for_capacity",
        "unknown field 'max_batch'; expected one of: max_batch_size, max_batch_delay_ms",
        "unknown field 'max_queue'; did you mean 'max_queued'?",
        "unknown field 'min_worker'; did you mean 'min_workers'?",
        "unknown field 'period'; did you mean 'period_ms'?");
  }
}
