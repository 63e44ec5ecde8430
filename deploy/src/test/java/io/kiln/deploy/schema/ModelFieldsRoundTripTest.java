package io.kiln.deploy.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spec.ModelField;
import io.kiln.pools.spec.ModelFields;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import io.kiln.serve.SpecJson;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every field of the model-spec schema ({@link ModelFields}) travels every form a spec takes: YAML → {@link ModelSpec}
 * → the event bus's wire form (JSON and CBOR) → {@link ModelSpec} → serve's JSON ({@code SpecJsonWriter}) → its reader
 * → the same spec. Each field is given a value other than its default, so a field that one of the forms drops or
 * mangles fails here. In deploy because only the node assembly has every engine (the Decoder's {@code options}).
 * The same samples go through {@link ModelSpec.Builder}. Adding a field to the schema without a sample here fails
 * {@link #everySchemaFieldHasASample()}.
 */
class ModelFieldsRoundTripTest {

  private static final Path SOURCE = Path.of("app.yaml");
  private static final DeploymentLoader LOADER =
      new DeploymentLoader(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false));
  private static final String TENSORS = """
            inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
      """;
  private static final String VAD_TENSORS = """
            inputs:
              - {name: input, datatype: FP32, shape: [-1, -1]}
              - {name: state, datatype: FP32, shape: [2, -1, 128]}
              - {name: sr, datatype: INT64, shape: []}
            outputs:
              - {name: output, datatype: FP32, shape: [-1, 1]}
              - {name: stateN, datatype: FP32, shape: [2, -1, 128]}
      """;

  /** Per field (its component), a deployment whose model gives that field a value other than its default. */
  private static final Map<String, String> SAMPLES = Map.ofEntries(
      Map.entry("uri", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n" + TENSORS, "")),
      Map.entry("engine", deployment("uri: /srv/models/mlp-onnx\n      engine: OnnxRuntime\n" + TENSORS, "")),
      Map.entry("format", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n      format: torchscript\n"
          + TENSORS, "")),
      Map.entry("architecture", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n      format: djl-params\n"
          + "      architecture: mlp:512,128\n" + TENSORS, "")),
      Map.entry("inputs", deployment("uri: builtin:identity\n      engine: Builtin\n" + TENSORS, "")),
      Map.entry("outputs", deployment("uri: builtin:identity\n      engine: Builtin\n" + TENSORS, "")),
      Map.entry("warmupBatchSizes", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n"
          + "      warmup: {batch_sizes: [2, 8]}\n" + TENSORS, "")),
      Map.entry("intraOpThreads", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n"
          + "      threads: {intra_op: 3}\n" + TENSORS, "")),
      Map.entry("interOpThreads", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n"
          + "      threads: {intra_op: 2, inter_op: 4}\n" + TENSORS, "")),
      Map.entry("python", deployment("uri: /srv/models/py\n      engine: Python\n" + TENSORS + """
                python:
                  class: Classifier
                  interpreter: /usr/bin/python3
                  config: {threshold: 0.5, labels: [cat, dog], nested: {on: true}}
                  env: {OMP_NUM_THREADS: "1"}
                  startup_timeout_ms: 1500.5
                  request_timeout_ms: 2500
          """, "")),
      Map.entry("allowCpuFallback", deployment("uri: /srv/models/mlp\n      engine: PyTorch\n"
          + "      allow_cpu_fallback: true\n" + TENSORS, "")),
      Map.entry("streaming", deployment("uri: /srv/models/py\n      engine: Python\n      streaming: true\n"
          + TENSORS, "")),
      Map.entry("sha256", deployment("uri: https://models.example.com/mlp.tar.gz\n      engine: PyTorch\n"
          + "      sha256: " + "0123456789abcdef".repeat(4) + "\n" + TENSORS, "")),
      Map.entry("options", deployment("uri: /srv/models/tiny-gpt\n      engine: Decoder\n"
          + "      options: {max_batched_tokens: 64, kv_cache_tokens: 1024, block_size: 16}\n", "")),
      Map.entry("sequence", deployment("uri: /srv/models/vad\n      engine: OnnxRuntime\n" + VAD_TENSORS, """
              sequence:
                idle_timeout_ms: 5000
                max_sequences: 64
                state: [{input: state, output: stateN, init: 0.25}]
          """)));

  private static String deployment(String model, String beside) {
    return """
        deployments:
          - name: m
            version: "1"
            model:
              %s    pool: {workers_per_node: 1}
            batching: {max_batch_size: 8}
        %s""".formatted(model.stripTrailing() + "\n", beside);
  }

  @Test
  void everySchemaFieldHasASample() {
    assertThat(SAMPLES.keySet()).as("a sample per ModelFields field, and none for a field it lacks")
        .containsExactlyInAnyOrderElementsOf(ModelFields.ALL.stream().map(ModelField::component).toList());
  }

  @TestFactory
  Stream<DynamicTest> everyFieldRoundTripsWithAValueOtherThanItsDefault() {
    return ModelFields.ALL.stream().map(f -> DynamicTest.dynamicTest(f.yaml(), () -> roundTrips(f)));
  }

  private static void roundTrips(ModelField f) throws Exception {
    DeploymentSpec deployment = LOADER.load(SAMPLES.get(f.component()), SOURCE).deployments().get(0);
    ModelSpec spec = deployment.model();
    Object value = ModelFields.get(f, spec);
    assertThat(f.isDefault(value)).as(f + " = " + value + " is its default").isFalse();

    for (ObjectMapper wire : List.of(WireCodec.json(), WireCodec.cbor())) {
      ModelSpec back = wire.readValue(wire.writeValueAsBytes(spec), ModelSpec.class);
      assertThat(back).as(f + " over the wire").isEqualTo(spec);
      assertThat(ModelFields.get(f, back)).isEqualTo(value);
    }
    String json = SpecJson.toJson(deployment);
    DeploymentSpec read = SpecJson.fromJson(json);
    assertThat(read).as(f + " through " + json).isEqualTo(deployment);
    assertThat(ModelFields.get(f, read.model())).isEqualTo(value);
    assertThat(SpecJson.toJson(read)).isEqualTo(json);
    // JSON is YAML: the YAML loader reads the written form to the same spec.
    assertThat(LOADER.load(SpecJson.toJson(List.of(deployment)), SOURCE).deployments()).containsExactly(deployment);
  }

  /**
   * The builder holds what the schema declares: each field's sample value, given through {@link ModelSpec.Builder#set}
   * with every other field of the sample, comes back from {@code build()} and from {@code toBuilder().build()}. A
   * builder or {@code toBuilder()} that dropped a field would give its default, which no sample holds.
   */
  @TestFactory
  Stream<DynamicTest> everyFieldSurvivesTheBuilderAndToBuilder() {
    return ModelFields.ALL.stream().map(f -> DynamicTest.dynamicTest(f.yaml(), () -> {
      ModelSpec spec = LOADER.load(SAMPLES.get(f.component()), SOURCE).deployments().get(0).model();
      Object value = ModelFields.get(f, spec);
      assertThat(f.isDefault(value)).as(f + " = " + value + " is its default").isFalse();
      ModelSpec.Builder builder = ModelSpec.builder();
      ModelFields.ALL.forEach(g -> builder.set(g, ModelFields.get(g, spec)));

      ModelSpec built = builder.build();
      ModelSpec rebuilt = built.toBuilder().build();

      assertThat(ModelFields.get(f, built)).as(f + " through set").isEqualTo(value);
      assertThat(built).isEqualTo(spec);
      assertThat(ModelFields.get(f, rebuilt)).as(f + " through toBuilder").isEqualTo(value);
      assertThat(rebuilt).isEqualTo(spec);
    }));
  }

  @Test
  void aMisspelledFieldIsNamedAtItsLineAndColumnWithTheClosestSchemaField() {
    String yaml = SAMPLES.get("allowCpuFallback").replace("allow_cpu_fallback:", "allow_cpu_fallbak:");

    List<Problem> problems = catchThrowableOfType(DeploymentValidationException.class,
        () -> LOADER.load(yaml, SOURCE)).problems();

    assertThat(problems).extracting(Problem::toString).containsExactly("app.yaml:7:7: deployments[0].model"
        + ".allow_cpu_fallbak: unknown field 'allow_cpu_fallbak'; did you mean 'allow_cpu_fallback'?");
  }

  @Test
  void aMisspelledFieldOfANestedSectionIsNamedToo() {
    String yaml = SAMPLES.get("interOpThreads").replace("inter_op:", "inter_ops:");

    List<Problem> problems = catchThrowableOfType(DeploymentValidationException.class,
        () -> LOADER.load(yaml, SOURCE)).problems();

    assertThat(problems).extracting(Problem::toString).containsExactly("app.yaml:7:30: deployments[0].model"
        + ".threads.inter_ops: unknown field 'inter_ops'; did you mean 'inter_op'?");
  }
}
