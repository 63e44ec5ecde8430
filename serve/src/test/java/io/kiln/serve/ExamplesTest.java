package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.kiln.pools.BatchingSpec;
import io.kiln.pools.DataType;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.Resources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The example files under deploy/examples load (or fail) exactly as documented. */
class ExamplesTest {

  /** Tests run in the module folder; the examples live beside it. */
  private static final Path EXAMPLES = Path.of("..", "deploy", "examples");

  @Test
  void quickstartLoads() {
    Path file = EXAMPLES.resolve("quickstart.yaml");
    DeploymentFile loaded = Specs.LOADER.load(file);
    assertThat(loaded.source()).isEqualTo(file);
    DeploymentSpec mlp = loaded.deployments().get(0);
    assertThat(loaded.deployments()).hasSize(1);
    assertThat(mlp.id()).isEqualTo("mlp@1");
    assertThat(mlp.model().engine()).isEqualTo(ModelSpec.ENGINE_PYTORCH);
    assertThat(mlp.model().format()).isEqualTo(ModelSpec.FORMAT_TORCHSCRIPT);
    // ../../models/mlp relative to deploy/examples is the repository's models/mlp.
    assertThat(mlp.model().uri()).isEqualTo(Path.of("..", "models", "mlp").toAbsolutePath().normalize());
    assertThat(mlp.model().inputs()).containsExactly(new TensorSpec("input", DataType.FP32, new long[] {-1, 64}));
    assertThat(mlp.model().outputs()).containsExactly(new TensorSpec("output", DataType.FP32, new long[] {-1, 10}));
    assertThat(mlp.model().warmupBatchSizes()).containsExactly(1, 8);
    assertThat(mlp.pool().workers()).isEqualTo(new PoolPlacement.PerNode(2));
    assertThat(mlp.pool().workerResources()).isEqualTo(Resources.cpu(1));
    assertThat(mlp.batching()).isEqualTo(new BatchingSpec(8, Duration.ofMillis(2)));
    assertThat(mlp.queue()).isEqualTo(new QueueSpec(512, Duration.ofSeconds(30)));
  }

  @Test
  void streamingExampleLoadsBothStreamingModels() {
    DeploymentFile loaded = Specs.LOADER.load(EXAMPLES.resolve("streaming/streaming.yaml"));
    assertThat(loaded.deployments()).extracting(DeploymentSpec::name).containsExactly("tokens", "chunks");
    assertThat(loaded.deployments()).allSatisfy(d -> assertThat(d.model().signature().streaming()).isTrue());
    assertThat(loaded.deployments().get(0).model().engine()).isEqualTo(ModelSpec.ENGINE_PYTHON);
  }

  @Test
  void textExampleLoadsItsBytesModels() {
    DeploymentFile loaded = Specs.LOADER.load(EXAMPLES.resolve("text/text.yaml"));
    assertThat(loaded.deployments()).extracting(DeploymentSpec::name).containsExactly("upper", "words");
    assertThat(loaded.deployments().get(0).model().inputs())
        .containsExactly(new TensorSpec("text", DataType.BYTES, new long[] {-1}));
    assertThat(loaded.deployments().get(0).model().outputs()).extracting(TensorSpec::datatype)
        .containsExactly(DataType.BYTES, DataType.INT32);
    assertThat(loaded.deployments().get(1).model().signature().streaming()).isTrue();
  }

  @Test
  void quickstartChecksItsModelFolder(@TempDir Path dir) throws Exception {
    // A copy at the same depth, with and without the model folder it names.
    Path examples = Files.createDirectories(dir.resolve("deploy/examples"));
    Path copy = Files.copy(EXAMPLES.resolve("quickstart.yaml"), examples.resolve("quickstart.yaml"));
    var e = catchThrowableOfType(DeploymentValidationException.class, () -> new DeploymentLoader().load(copy));
    assertThat(e.problems()).extracting(Problem::line, Problem::column, Problem::path)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(10, 12, "deployments[0].model.uri"));

    Files.createDirectories(dir.resolve("models/mlp"));
    assertThat(new DeploymentLoader().load(copy).deployments().get(0).model().uri().toString())
        .isEqualTo(dir.resolve("models/mlp").toString());
  }

  @Test
  void invalidExampleReportsEveryMistakeInFileOrder() {
    Path file = EXAMPLES.resolve("invalid.yaml");
    var e = catchThrowableOfType(DeploymentValidationException.class, () -> Specs.LOADER.load(file));
    String f = file.toString();
    List<String> expected = List.of(
        f + ":3:11: deployments[0].name: 'My_Model' is not a valid name: use 1 to 63 lowercase letters, digits and"
            + " '-', starting and ending with a letter or digit",
        f + ":8:37: deployments[0].model.inputs[0].datatype: unknown datatype 'FP23'; did you mean 'FP32'?",
        f + ":9:51: deployments[0].model.outputs[0].shape[0]: must be -1 (any size) or >= 0, got -2",
        f + ":11:7: deployments[0].pool.workers_per_node: one of workers_per_node, per_gpu or num_workers is required"
            + " (or an autoscaling section)",
        f + ":11:7: deployments[0].pool.workers_per_nod: unknown field 'workers_per_nod';"
            + " did you mean 'workers_per_node'?",
        f + ":12:31: deployments[0].pool.worker_resources.GPU: GPU above 1 must be a whole number, got 1.5",
        f + ":13:32: deployments[0].batching.max_batch_size: expected an integer, got a string 'eight'",
        f + ":13:59: deployments[0].batching.max_batch_delay_ms: must not be negative, got -1",
        f + ":17:12: deployments[1].model.uri: 'builtin:identity' names a builtin model; set engine: Builtin",
        f + ":21:30: deployments[1].pool.workers_per_node: must be at least 1, got 0",
        f + ":23:32: deployments[1].batching.max_batch_size: max_batch_size 8 exceeds queue.max_queued 4:"
            + " a batch could never fill",
        f + ":24:32: deployments[1].autoscaling.min_workers: min_workers 3 exceeds max_workers 2");
    assertThat(e.problems()).extracting(Problem::toString).containsExactlyElementsOf(expected);
    assertThat(e.getMessage()).isEqualTo(String.join("\n", expected));
  }
}
