package io.kiln.serve;

import static io.kiln.serve.Specs.MINIMAL;
import static io.kiln.serve.Specs.onlyProblem;
import static io.kiln.serve.Specs.problems;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Problems in the model section: engine, URI and folder, format, tensors, warm-up, threads. */
class ModelValidationTest {

  /** A PyTorch model in folder {@code models/mlp} next to the YAML file. */
  private static final String PYTORCH = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: models/mlp
            engine: PyTorch
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
          pool:
            workers_per_node: 2
      """;

  @Test
  void unknownEngine() {
    onlyProblem(MINIMAL.replace("engine: Builtin", "engine: TensorFlow"), 6, 15, "deployments[0].model.engine",
        "unknown engine 'TensorFlow'; expected one of: PyTorch, OnnxRuntime, Python, Builtin");
    onlyProblem(PYTORCH.replace("engine: PyTorch", "engine: pytorch"), 6, 15, "deployments[0].model.engine",
        "unknown engine 'pytorch'; did you mean 'PyTorch'?");
  }

  @Test
  void streamingIsOnlyForModelsThatStream() {
    onlyProblem(MINIMAL.replace("engine: Builtin", "engine: Builtin\n      streaming: true"), 7, 18,
        "deployments[0].model.streaming", "'builtin:identity' does not stream; the streaming built-ins are [builtin:chunks]");
    onlyProblem(MINIMAL.replace("engine: Builtin", "engine: Builtin\n      streaming: yes please"), 7, 18,
        "deployments[0].model.streaming", "");
    DeploymentSpec chunks = Specs.single(MINIMAL.replace("builtin:identity", "builtin:chunks")
        .replace("name: output", "name: input"));
    assertThat(chunks.model().streaming()).as("a streaming built-in streams unasked").isTrue();
    assertThat(chunks.model().signature().streaming()).isTrue();
    assertThat(io.kiln.pools.SpecRules.streamingFits(ModelSpec.ENGINE_PYTORCH, "models/mlp", true))
        .isEqualTo("applies to engines Python (a class with predict_stream) and Builtin ([builtin:chunks]), not PyTorch");
  }

  @Test
  void engineOptionsAreCheckedByTheirEngineAtTheirLine() {
    onlyProblem(MINIMAL.replace("engine: Builtin", "engine: Builtin\n      options: {max_num_seqs: 8}"), 7, 17,
        "deployments[0].model.options.max_num_seqs", "unknown option of engine Builtin (it takes none)");
    onlyProblem(MINIMAL.replace("engine: Builtin", "engine: Builtin\n      options: {nested: {a: 1}}"), 7, 25,
        "deployments[0].model.options.nested", "must be a single value (text, number or boolean), got a mapping");
  }

  @Test
  void aBuiltinModelThatDoesNotExistIsRefusedWhenLoaded() {
    onlyProblem(MINIMAL.replace("builtin:identity", "builtin:nope"), 5, 7, "deployments[0].model",
        "unknown built-in model 'builtin:nope'");
  }

  @Test
  void engineAndUriMustAgree() {
    onlyProblem(MINIMAL.replace("engine: Builtin", "engine: PyTorch"), 5, 12, "deployments[0].model.uri",
        "'builtin:identity' names a builtin model; set engine: Builtin");
    onlyProblem(PYTORCH.replace("engine: PyTorch", "engine: Builtin"), 5, 12, "deployments[0].model.uri",
        "engine Builtin needs a uri of the form builtin:<name>, e.g. builtin:identity");
    onlyProblem(MINIMAL.replace("builtin:identity", "builtin:Ident ity"), 5, 12, "deployments[0].model.uri",
        "'builtin:Ident ity' is not a valid builtin model");
    onlyProblem(PYTORCH.replace("uri: models/mlp", "uri: ftp://host/mlp"), 5, 12, "deployments[0].model.uri",
        "unsupported uri scheme 'ftp': use a model folder path, builtin:<name>, or one of https://, http://, s3://");
  }

  @Test
  void remoteUrisAreCheckedButNeitherResolvedNorLookedFor(@TempDir Path dir) throws Exception {
    String sha = "ab".repeat(32);
    String https = PYTORCH.replace("uri: models/mlp", "uri: https://models.example/mlp.tar.gz\n      sha256: " + sha);
    ModelSpec model = Specs.single(https).model();
    assertThat(model.remoteUri()).contains(java.net.URI.create("https://models.example/mlp.tar.gz"));
    assertThat(model.sha256()).isEqualTo(sha);
    // with folder checks on and a YAML file in a folder: the uri is still not resolved against it
    Path yaml = dir.resolve("app.yaml");
    Files.writeString(yaml, https);
    ModelSpec loaded = new DeploymentLoader().load(yaml).deployments().get(0).model();
    assertThat(io.kiln.pools.ModelUris.canonical(loaded.uri().toString())).isEqualTo("https://models.example/mlp.tar.gz");

    onlyProblem(PYTORCH.replace("uri: models/mlp", "uri: https://models.example/mlp.tar.gz"), 5, 12,
        "deployments[0].model.sha256", "required for an https uri");
    onlyProblem(PYTORCH.replace("uri: models/mlp", "uri: https://models.example/m.pt\n      sha256: ABC"), 6, 15,
        "deployments[0].model.sha256", "must be 64 lower-case hex digits, got 'ABC'");
    onlyProblem(PYTORCH.replace("uri: models/mlp", "uri: http://models.example/m.pt\n      sha256: " + sha), 5, 12,
        "deployments[0].model.uri", "plain http:// is allowed only to a loopback host");
    onlyProblem(PYTORCH.replace("engine: PyTorch", "engine: PyTorch\n      sha256: " + sha), 7, 15,
        "deployments[0].model.sha256", "only for remote uris");
    assertThat(Specs.single(PYTORCH.replace("uri: models/mlp", "uri: s3://bucket/models/mlp/")).model().remoteUri())
        .contains(java.net.URI.create("s3://bucket/models/mlp")); // a path keeps no trailing slash: s3 tells object from prefix itself
  }

  @Test
  void modelFolderMustExistRelativeToTheYamlFile(@TempDir Path dir) throws Exception {
    Path yaml = dir.resolve("app.yaml");
    Files.writeString(yaml, PYTORCH);
    var e = org.assertj.core.api.Assertions.catchThrowableOfType(DeploymentValidationException.class,
        () -> new DeploymentLoader().load(yaml));
    assertThat(e.problems()).singleElement().satisfies(p -> {
      assertThat(p.line()).isEqualTo(5);
      assertThat(p.column()).isEqualTo(12);
      assertThat(p.path()).isEqualTo("deployments[0].model.uri");
      assertThat(p.message()).isEqualTo("model folder " + dir.resolve("models/mlp") + " does not exist "
          + "(relative paths are resolved against the YAML file's folder " + dir + ")");
    });

    Files.createDirectories(dir.resolve("models/mlp"));
    DeploymentSpec spec = new DeploymentLoader().load(yaml).deployments().get(0);
    assertThat(spec.model().uri().toString()).isEqualTo(dir.resolve("models/mlp").toString());
    assertThat(spec.model().uri()).isEqualTo(dir.resolve("models/mlp"));

    // An absolute uri is taken as it is; the message then has no note on relative paths.
    String absent = PYTORCH.replace("uri: models/mlp", "uri: " + dir.resolve("nope"));
    var e2 = org.assertj.core.api.Assertions.catchThrowableOfType(DeploymentValidationException.class,
        () -> new DeploymentLoader().load(absent, yaml));
    assertThat(e2.problems()).extracting(Problem::message)
        .containsExactly("model folder " + dir.resolve("nope") + " does not exist");
  }

  @Test
  void builtinModelsNeedNoFolder() {
    assertThat(problemsOrNone(new DeploymentLoader(), MINIMAL)).isZero();
  }

  private static int problemsOrNone(DeploymentLoader loader, String yaml) {
    return loader.load(yaml, Specs.SOURCE).deployments().size() == 1 ? 0 : -1;
  }

  @Test
  void unknownDatatype() {
    onlyProblem(MINIMAL.replace("datatype: FP32, shape: [-1, 4]}]\n      outputs",
            "datatype: FP23, shape: [-1, 4]}]\n      outputs"), 7, 42,
        "deployments[0].model.inputs[0].datatype", "unknown datatype 'FP23'; did you mean 'FP32'?");
    onlyProblem(MINIMAL.replace("{name: output, datatype: FP32", "{name: output, datatype: float"), 8, 42,
        "deployments[0].model.outputs[0].datatype", "unknown datatype 'float'; expected one of: BOOL, UINT8");
  }

  @Test
  void badShapes() {
    onlyProblem(MINIMAL.replace("shape: [-1, 4]}]\n      outputs", "shape: [-1, -5]}]\n      outputs"), 7, 60,
        "deployments[0].model.inputs[0].shape[1]", "must be -1 (any size) or >= 0, got -5");
    onlyProblem(MINIMAL.replace("shape: [-1, 4]}]\n      outputs", "shape: [-1, 4.5]}]\n      outputs"), 7, 60,
        "deployments[0].model.inputs[0].shape[1]", "expected an integer, got the number 4.5");
    String rank33 = "[" + "1, ".repeat(32) + "1]";
    onlyProblem(MINIMAL.replace("shape: [-1, 4]}]\n      outputs", "shape: " + rank33 + "}]\n      outputs"), 7, 55,
        "deployments[0].model.inputs[0].shape", "has 33 dimensions; at most 32 are supported");
  }

  @Test
  void duplicateTensorNames() {
    String yaml = MINIMAL.replace("      inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]",
        "      inputs:\n        - {name: a, datatype: FP32, shape: [-1, 4]}\n        - {name: a, datatype: INT64, shape: [-1]}");
    onlyProblem(yaml, 9, 18, "deployments[0].model.inputs[1].name", "duplicate input name 'a' (also inputs[0])");
    // The same name on an input and an output is fine (an identity model).
    var spec = Specs.single(MINIMAL.replace("{name: output,", "{name: input,"));
    assertThat(spec.model().outputs()).containsExactly(new TensorSpec("input", DataType.FP32, new long[] {-1, 4}));
  }

  @Test
  void tensorListsMustNotBeEmpty() {
    onlyProblem(MINIMAL.replace("outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]", "outputs: []"), 8, 16,
        "deployments[0].model.outputs", "declare at least one output");
  }

  @Test
  void formatAndArchitecture() {
    onlyProblem(PYTORCH.replace("      engine: PyTorch\n", "      engine: PyTorch\n      format: onnx\n"), 7, 15,
        "deployments[0].model.format", "unknown format 'onnx'; expected one of: torchscript, djl-params");
    onlyProblem(PYTORCH.replace("      engine: PyTorch\n", "      engine: PyTorch\n      format: djl-params\n"), 7, 15,
        "deployments[0].model.architecture", "format djl-params needs an architecture");
    onlyProblem(PYTORCH.replace("      engine: PyTorch\n",
            "      engine: PyTorch\n      format: torchscript\n      architecture: mlp\n"), 8, 7,
        "deployments[0].model.architecture", "architecture is only used with format: djl-params");
    onlyProblem(MINIMAL.replace("      engine: Builtin\n", "      engine: Builtin\n      format: torchscript\n"), 7, 15,
        "deployments[0].model.format", "format applies to the PyTorch engine only");
    var spec = Specs.single(PYTORCH.replace("      engine: PyTorch\n",
        "      engine: PyTorch\n      format: djl-params\n      architecture: mlp\n"));
    assertThat(spec.model().format()).isEqualTo(ModelSpec.FORMAT_DJL_PARAMS);
    assertThat(spec.model().architecture()).isEqualTo("mlp");
  }

  @Test
  void warmupBatchesMustFitTheBatchLimit() {
    String yaml = MINIMAL.replace("      outputs:", "      warmup: {batch_sizes: [1, 8, 16]}\n      outputs:")
        + "    batching: {max_batch_size: 8}\n";
    onlyProblem(yaml, 8, 36, "deployments[0].model.warmup.batch_sizes[2]",
        "warmup batch size 16 exceeds batching.max_batch_size 8: such a batch never runs");
    onlyProblem(MINIMAL.replace("      outputs:", "      warmup: {batch_sizes: [0]}\n      outputs:"), 8, 30,
        "deployments[0].model.warmup.batch_sizes[0]", "must be at least 1, got 0");
    var spec = Specs.single(MINIMAL.replace("      outputs:", "      warmup: {batch_sizes: []}\n      outputs:"));
    assertThat(spec.model().warmupBatchSizes()).isEmpty();
  }

  @Test
  void threadsMustBePositive() {
    onlyProblem(MINIMAL.replace("      outputs:", "      threads: {intra_op: 0}\n      outputs:"), 8, 27,
        "deployments[0].model.threads.intra_op", "must be at least 1, got 0");
    var spec = Specs.single(MINIMAL.replace("      outputs:", "      threads: {inter_op: 2}\n      outputs:"));
    assertThat(spec.model().intraOpThreads()).isEqualTo(1);
    assertThat(spec.model().interOpThreads()).isEqualTo(2);
  }

  @Test
  void allProblemsOfOneTensorAreReported() {
    var problems = problems(MINIMAL.replace("{name: input,  datatype: FP32, shape: [-1, 4]}",
        "{name: '', datatype: FP3, shape: [-3], extra: 1}"));
    assertThat(problems).extracting(Problem::path).containsExactly(
        "deployments[0].model.inputs[0].name",
        "deployments[0].model.inputs[0].datatype",
        "deployments[0].model.inputs[0].shape[0]",
        "deployments[0].model.inputs[0].extra");
  }
}
