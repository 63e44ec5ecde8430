package io.kiln.pipelines;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import io.kiln.serve.ServeController;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * One apply of a deployment file on a one-node in-process cluster with the real controller and pipelines:
 * deployments and pipelines are validated together, and stored together or not at all. Each test uses its
 * own names, so the shared node's state does not couple them. The deployments select no node (the test is
 * about what is stored, not served), so no pool is being created while the node closes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class ApplicationsTest {

  static final Path SOURCE = Path.of("app.yaml");

  @TempDir
  static Path tmp;

  LocalCluster cluster;
  KilnRuntime runtime;
  PoolLoadBoard board;
  ServeController serve;
  Pipelines pipelines;
  Applications applications;

  static String file(String deployment, String pipeline, String inferOn) {
    return """
        deployments:
          - name: %s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 1}, node_selector: {zone: nowhere}}
        pipelines:
          - name: %s
            steps:
              - name: fetch
                fetch: "${input.media_uri}"
              - name: analyse
                infer: {deployment: %s}
        """.formatted(deployment, pipeline, inferOn);
  }

  @BeforeAll
  void start() {
    cluster = LocalCluster.create();
    runtime = result(cluster.startNode(new NodeOptions("a", "127.0.0.1", Resources.cpu(4), Map.of())));
    board = new PoolLoadBoard(runtime);
    PoolClient client = new PoolClient(runtime);
    serve = new ServeController(runtime, client, board);
    pipelines = new Pipelines(runtime, PipelineOptions.defaults(tmp, "a"), DeploymentResolver.of(serve), client);
    result(board.ready());
    result(serve.start());
    result(pipelines.start());
    applications = new Applications(runtime, serve, pipelines);
  }

  @AfterAll
  void stop() {
    pipelines.close();
    serve.close();
    board.close();
    cluster.close();
  }

  boolean stored(String pipeline) {
    return result(pipelines.pipeline(pipeline)).isPresent();
  }

  @Test
  void aValidFileAppliesDeploymentsAndPipelines() {
    Applications.Result r = result(applications.apply(file("both", "both-p", "both"), SOURCE, false));
    assertThat(r.applied()).isTrue();
    assertThat(r.deployments().applied()).isTrue();
    assertThat(r.deployments().deployments()).extracting(DeploymentSpec::name).containsExactly("both");
    assertThat(r.pipelines()).extracting(PipelineSpec::name).containsExactly("both-p");
    assertThat(serve.desired()).containsKey("both");
    assertThat(stored("both-p")).isTrue();
  }

  @Test
  void aDryRunPlansBothAndStoresNeither() {
    Applications.Result r = result(applications.apply(file("dry", "dry-p", "dry"), SOURCE, true));
    assertThat(r.applied()).isFalse();
    assertThat(r.deployments().applied()).isFalse();
    assertThat(r.deployments().plan().deployments()).extracting(d -> d.name()).containsExactly("dry");
    assertThat(r.pipelines()).extracting(PipelineSpec::name).containsExactly("dry-p");
    assertThat(serve.desired()).doesNotContainKey("dry");
    assertThat(stored("dry-p")).isFalse();
  }

  @Test
  void aValidDeploymentWithAnInvalidPipelineStoresNothing() {
    String yaml = file("good", "bad-p", "nowhere");
    Throwable t = failure(applications.apply(yaml, SOURCE, false));
    assertThat(t).isInstanceOf(DeploymentValidationException.class);
    List<Problem> problems = ((DeploymentValidationException) t).problems();
    assertThat(problems).extracting(Problem::path).containsExactly("pipelines[0].steps[1].infer.deployment");
    assertThat(problems.get(0).line()).isEqualTo(16);
    assertThat(serve.desired()).doesNotContainKey("good");
    assertThat(stored("bad-p")).isFalse();
  }

  @Test
  void anInvalidDeploymentWithAValidPipelineStoresNothing() {
    String yaml = file("broken", "fine-p", "broken").replace("workers_per_node: 1", "workers_per_node: -1");
    Throwable t = failure(applications.apply(yaml, SOURCE, false));
    assertThat(t).isInstanceOf(DeploymentValidationException.class);
    assertThat(((DeploymentValidationException) t).problems()).extracting(Problem::path)
        .containsExactly("deployments[0].pool.workers_per_node");
    assertThat(serve.desired()).doesNotContainKey("broken");
    assertThat(stored("fine-p")).isFalse();
  }

  @Test
  void typedSpecsAreCheckedTogetherAndAppliedTogether() {
    PipelineFile parsed = new PipelineLoader().load(file("typed", "typed-p", "typed"), SOURCE, Set.of());
    Throwable t = failure(applications.apply(List.of(), parsed.pipelines(), false));
    List<Problem> problems = ((DeploymentValidationException) t).problems();
    assertThat(problems).extracting(Problem::path).containsExactly("pipelines[0].steps[1].infer.deployment");
    assertThat(problems.get(0).message()).startsWith("unknown deployment 'typed'; known deployments: ");
    assertThat(stored("typed-p")).isFalse();

    Applications.Result dry = result(applications.apply(parsed.deployments(), parsed.pipelines(), true));
    assertThat(dry.applied()).isFalse();
    assertThat(serve.desired()).doesNotContainKey("typed");
    assertThat(stored("typed-p")).isFalse();

    Applications.Result r = result(applications.apply(parsed.deployments(), parsed.pipelines(), false));
    assertThat(r.applied()).isTrue();
    assertThat(serve.desired()).containsKey("typed");
    assertThat(stored("typed-p")).isTrue();
  }

  @Test
  void aDuplicateTypedPipelineIsAProblem() {
    PipelineFile parsed = new PipelineLoader(PipelineLoader.Options.DEFAULT
        .withDeployments(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false)))
        .load(file("twice", "twice-p", "twice"), SOURCE, Set.of());
    PipelineSpec p = parsed.pipelines().get(0);
    Throwable t = failure(applications.apply(parsed.deployments(), List.of(p, p), false));
    assertThat(((DeploymentValidationException) t).problems()).extracting(Problem::path)
        .containsExactly("pipelines[1].name");
    assertThat(serve.desired()).doesNotContainKey("twice");
  }

  /** What `kiln deploy` applies: a running version re-applied with other batching is refused at its version. */
  @Test
  void aChangeThatNeedsANewVersionIsRefusedAtTheVersionWithItsPipelines() {
    assertThat(result(applications.apply(file("kept", "kept-p", "kept"), SOURCE, false)).applied()).isTrue();
    String changed = file("kept", "kept-p2", "kept").replace("node_selector: {zone: nowhere}}\n",
        "node_selector: {zone: nowhere}}\n    batching: {max_batch_size: 2}\n");
    Throwable t = failure(applications.apply(changed, SOURCE, false));
    assertThat(t).isInstanceOf(DeploymentValidationException.class);
    assertThat(((DeploymentValidationException) t).problems()).singleElement().satisfies(p -> {
      assertThat(p.toString()).startsWith("app.yaml:3:14: deployments[0].version: spec changed but version \"1\" is"
          + " the same: batching differs");
    });
    assertThat(serve.desired().get("kept").batching().maxBatchSize()).isNotEqualTo(2);
    assertThat(stored("kept-p2")).isFalse();
    assertThat(result(applications.apply(changed.replace("version: \"1\"", "version: \"2\""), SOURCE, false))
        .applied()).isTrue();
    assertThat(serve.desired().get("kept").batching().maxBatchSize()).isEqualTo(2);
  }
}
