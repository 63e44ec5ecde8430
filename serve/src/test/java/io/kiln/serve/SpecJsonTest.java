package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.BatchingSpec;
import io.kiln.pools.DataType;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.Resources;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SpecJsonTest {

  /** Every optional part present, fractions and awkward strings included. */
  static final DeploymentSpec FULL = new DeploymentSpec("resnet-50", "2024.1_rc-3",
      ModelSpec.builder().uri("/models/resnet").engine(ModelSpec.ENGINE_PYTORCH).format(ModelSpec.FORMAT_DJL_PARAMS)
          .architecture("resnet18")
          .inputs(List.of(new TensorSpec("image", DataType.FP16, new long[] {-1, 3, 224, 224}),
              new TensorSpec("mask", DataType.BOOL, new long[] {-1, 0})))
          .outputs(List.of(new TensorSpec("logits", DataType.FP32, new long[] {-1, 1000})))
          .warmupBatchSizes(1, 4, 16).intraOpThreads(2).interOpThreads(1).build(),
      new PoolPlacement(new PoolPlacement.PerGpu(2), Resources.gpu(0.5).withCpu(0.25).with("step_a_slot", 1),
          Map.of("zone", "eu/west \"1\"", "accelerator", "h200 ✓"), -1),
      new BatchingSpec(16, Duration.ofNanos(500_000)),
      new QueueSpec(1024, Duration.ofMillis(1500)),
      Optional.of(new AutoscalingSpec(0, 3, 1.5, Duration.ofMillis(250), Duration.ofMinutes(1))),
      new HealthSpec(Duration.ofSeconds(5), Duration.ofMillis(2500)));

  @Test
  void roundTripsEveryField() {
    String json = SpecJson.toJson(FULL);
    assertThat(SpecJson.fromJson(json)).isEqualTo(FULL);
  }

  @Test
  void roundTripsDefaultsAndBuiltins() {
    DeploymentSpec minimal = Specs.single(Specs.MINIMAL);
    assertThat(SpecJson.fromJson(SpecJson.toJson(minimal))).isEqualTo(minimal);
  }

  @Test
  void writesTheYamlSchemaWithPlainNumbers() throws Exception {
    JsonNode tree = new ObjectMapper().readTree(SpecJson.toJson(FULL));
    assertThat(tree.at("/pool/per_gpu").asInt()).isEqualTo(2);
    assertThat(tree.at("/pool/worker_resources").toString()).isEqualTo("{\"CPU\":0.25,\"GPU\":0.5,\"step_a_slot\":1}");
    assertThat(tree.at("/batching").toString()).isEqualTo("{\"max_batch_size\":16,\"max_batch_delay_ms\":0.5}");
    assertThat(tree.at("/health").toString()).isEqualTo("{\"period_ms\":5000,\"timeout_ms\":2500}");
    assertThat(tree.at("/model/format").asText()).isEqualTo("djl-params");
    assertThat(tree.at("/model/inputs/0/shape").toString()).isEqualTo("[-1,3,224,224]");
    assertThat(tree.at("/autoscaling/target_ongoing_per_worker").asDouble()).isEqualTo(1.5);
  }

  @Test
  void jsonOfAFileIsItselfAValidDeploymentDocument() {
    List<DeploymentSpec> specs = List.of(FULL, Specs.single(Specs.MINIMAL));
    String json = SpecJson.toJson(specs);
    assertThat(SpecJson.listFromJson(json)).isEqualTo(specs);
    // JSON is YAML: the YAML loader reads the same document to the same specs.
    assertThat(Specs.LOADER.load(SpecJson.toTree(specs).toPrettyString(), Specs.SOURCE).deployments())
        .isEqualTo(specs);
  }

  @Test
  void jacksonModuleSerializesAndDeserializes() throws Exception {
    ObjectMapper mapper = new ObjectMapper().registerModule(SpecJson.module());
    String json = mapper.writeValueAsString(FULL);
    assertThat(mapper.readValue(json, DeploymentSpec.class)).isEqualTo(FULL);
    record Envelope(String owner, DeploymentSpec spec) {
    }
    Envelope e = mapper.readValue(mapper.writeValueAsString(new Envelope("ci", FULL)), Envelope.class);
    assertThat(e.spec()).isEqualTo(FULL);

    String broken = json.replace("\"max_batch_size\":16", "\"max_batch_size\":0");
    assertThatThrownBy(() -> mapper.readValue(broken, DeploymentSpec.class))
        .isInstanceOf(JsonMappingException.class)
        .hasCauseInstanceOf(DeploymentValidationException.class)
        .hasMessageContaining("batching.max_batch_size: must be at least 1, got 0");
  }

  @Test
  void malformedJsonIsRefusedWithItsPosition() {
    var e = catchThrowableOfType(DeploymentValidationException.class, () -> SpecJson.fromJson("{\"name\": \"mlp\",\n}"));
    assertThat(e.problems()).singleElement().satisfies(p -> {
      assertThat(p.file()).isEqualTo("<json>");
      assertThat(p.line()).isEqualTo(2);
      assertThat(p.column()).isEqualTo(1);
      assertThat(p.message()).startsWith("JSON syntax error: Unexpected character ('}'");
    });
  }

  @Test
  void tamperedJsonReportsEveryProblemWithPositions() {
    String json = """
        {"name": "Bad Name", "version": "1",
         "model": {"uri": "builtin:identity", "engine": "Builtin",
                   "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1]}],
                   "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]},
         "pool": {"workers_per_node": 0, "worker_per_node": 1}}
        """;
    var e = catchThrowableOfType(DeploymentValidationException.class, () -> SpecJson.fromJson(json));
    assertThat(e.problems()).extracting(Problem::toString).containsExactly(
        "<json>:1:10: name: 'Bad Name' is not a valid name: use 1 to 63 lowercase letters, digits and '-',"
            + " starting and ending with a letter or digit",
        "<json>:5:31: pool.workers_per_node: must be at least 1, got 0",
        "<json>:5:34: pool.worker_per_node: unknown field 'worker_per_node'; did you mean 'workers_per_node'?");
  }

  @Test
  void jsonEscapesThatYamlLacksAreRead() {
    String json = SpecJson.toJson(Specs.single(Specs.MINIMAL)).replace("\"node_selector\":{}",
        "\"node_selector\":{\"path\":\"a\\/b\"}");
    assertThat(SpecJson.fromJson(json).pool().nodeSelector()).containsEntry("path", "a/b");
  }

  @Test
  void oversizedOrEmptyJson() {
    assertThatThrownBy(() -> SpecJson.fromJson(" ")).isInstanceOf(DeploymentValidationException.class)
        .hasMessage("<json>:1:1: the JSON is empty");
    assertThatThrownBy(() -> SpecJson.fromJson("[" + " ".repeat(1 << 20) + "]"))
        .hasMessageContaining("the limit is 1048576");
  }
}
