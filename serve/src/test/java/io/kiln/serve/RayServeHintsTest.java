package io.kiln.serve;

import static io.kiln.serve.Specs.problems;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Ray Serve's field names, written from habit, are answered with where Kiln keeps the setting. */
class RayServeHintsTest {

  private static final String HEAD = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
      """;

  @Test
  void deploymentLevelFieldsPointToTheirKilnHomes() {
    String yaml = HEAD + """
              user_config: {threshold: 0.5}
            pool:
              workers_per_node: 2
              ray_actor_options: {num_gpus: 1}
            num_replicas: 4
            route_prefix: /mlp
            max_ongoing_requests: 8
            max_concurrent_queries: 8
            max_batch_size: 8
            batching: {batch_wait_timeout_s: 0.01}
            autoscaling_config: {min_replicas: 1}
            health_check_period_s: 10
            max_queued_requests: 100
        """;
    String ray = " (a Ray Serve field); ";
    assertThat(problems(yaml)).extracting(Problem::toString).containsExactly(
        "app.yaml:9:7: deployments[0].model.user_config: unknown field 'user_config'" + ray
            + "a Python model's settings go in model.python.config",
        "app.yaml:12:7: deployments[0].pool.ray_actor_options: unknown field 'ray_actor_options'" + ray
            + "what each worker reserves is pool.worker_resources, e.g. {CPU: 1, GPU: 1}",
        "app.yaml:13:5: deployments[0].num_replicas: unknown field 'num_replicas'" + ray
            + "Kiln counts workers per node: pool.workers_per_node, or pool.num_workers for a cluster-wide total",
        "app.yaml:14:5: deployments[0].route_prefix: unknown field 'route_prefix'" + ray
            + "Kiln serves every deployment at /v2/models/<name>: there is no route prefix",
        "app.yaml:15:5: deployments[0].max_ongoing_requests: unknown field 'max_ongoing_requests'" + ray
            + "a worker runs one batch at a time: batching.max_batch_size bounds it, queue.max_queued bounds what"
            + " waits on each node's pool",
        "app.yaml:16:5: deployments[0].max_concurrent_queries: unknown field 'max_concurrent_queries'" + ray
            + "a worker runs one batch at a time: batching.max_batch_size bounds it, queue.max_queued bounds what"
            + " waits on each node's pool",
        "app.yaml:17:5: deployments[0].max_batch_size: unknown field 'max_batch_size'" + ray
            + "batching is its own section: batching.max_batch_size",
        "app.yaml:18:16: deployments[0].batching.batch_wait_timeout_s: unknown field 'batch_wait_timeout_s'" + ray
            + "batching.max_batch_delay_ms (milliseconds)",
        "app.yaml:19:5: deployments[0].autoscaling_config: unknown field 'autoscaling_config'" + ray
            + "Kiln's section is autoscaling (min_workers, max_workers, target_ongoing_per_worker; per node)",
        "app.yaml:20:5: deployments[0].health_check_period_s: unknown field 'health_check_period_s'" + ray
            + "health.period_ms (milliseconds)",
        "app.yaml:21:5: deployments[0].max_queued_requests: unknown field 'max_queued_requests'" + ray
            + "queue.max_queued bounds what waits on each node's pool");
  }

  @Test
  void autoscalingConfigFieldsInsideKilnsSection() {
    String yaml = HEAD + """
            pool: {workers_per_node: 4}
            autoscaling:
              min_replicas: 1
              max_replicas: 4
              target_ongoing_requests: 2
              upscale_delay_s: 30
        """;
    assertThat(problems(yaml)).extracting(Problem::toString).containsExactly(
        // max_workers is required: its absence is reported where the section starts.
        "app.yaml:11:7: deployments[0].autoscaling.max_workers: missing required field 'max_workers'",
        "app.yaml:11:7: deployments[0].autoscaling.min_replicas: unknown field 'min_replicas' (a Ray Serve field);"
            + " autoscaling.min_workers (per node)",
        "app.yaml:12:7: deployments[0].autoscaling.max_replicas: unknown field 'max_replicas' (a Ray Serve field);"
            + " autoscaling.max_workers (per node)",
        "app.yaml:13:7: deployments[0].autoscaling.target_ongoing_requests: unknown field 'target_ongoing_requests'"
            + " (a Ray Serve field); autoscaling.target_ongoing_per_worker",
        "app.yaml:14:7: deployments[0].autoscaling.upscale_delay_s: unknown field 'upscale_delay_s'"
            + " (a Ray Serve field); autoscaling.upscale_delay_ms (milliseconds)");
  }

  @Test
  void aRayServeFileAtTheTopLevel() {
    String yaml = """
        applications:
          - name: app
            route_prefix: /
            import_path: app:model
        """;
    assertThat(problems(yaml)).extracting(Problem::toString).containsExactly(
        "app.yaml:1:1: deployments: missing required field 'deployments'",
        "app.yaml:1:1: applications: unknown field 'applications' (a Ray Serve field); a Kiln file lists deployments"
            + " at the top level (deployments: [...])");
  }

  @Test
  void aNearMissOfAKilnFieldStillGetsDidYouMean() {
    String yaml = HEAD + "    pool: {num_worker: 4}\n";
    assertThat(problems(yaml)).extracting(Problem::message).contains(
        "unknown field 'num_worker'; did you mean 'num_workers'?");
  }
}
