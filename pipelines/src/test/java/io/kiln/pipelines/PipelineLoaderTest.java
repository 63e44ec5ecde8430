package io.kiln.pipelines;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The {@code pipelines:} section: what it builds, and every problem with its line, column and path. */
class PipelineLoaderTest {

  static final Path SOURCE = Path.of("app.yaml");
  static final PipelineLoader LOADER = new PipelineLoader(PipelineLoader.Options.DEFAULT
      .withDeployments(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false)));

  static final String DEPLOYMENT = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
          pool: {workers_per_node: 1}
      """;

  /** The seed's four steps. Line 10 is "pipelines:". */
  static final String MEDIA = DEPLOYMENT + """
      pipelines:
        - name: media
          on_node_loss: rerun
          max_reruns: 2
          webhook: "${input.done_url}"
          steps:
            - name: fetch
              fetch: {uri: "${input.media_uri}", max_bytes: 1048576}
              resources: {fetch_slot: 1}
              strategy: spread
              retries: 2
            - name: analyse
              infer: {deployment: mlp}
            - name: describe
              class: io.kiln.pipelines.TestSteps$Echo
              params: {from: analyse, who: "${input.who}"}
            - name: callback
              webhook: {url: "${input.callback_url}", timeout_ms: 5000}
              strategy: {node_with_resource: callback_slot}
      """;

  static PipelineFile load(String yaml) {
    return LOADER.load(yaml, SOURCE, Set.of());
  }

  static List<Problem> problems(String yaml) {
    DeploymentValidationException e = catchThrowableOfType(DeploymentValidationException.class, () -> load(yaml));
    assertThat(e).as("expected problems in:\n" + yaml).isNotNull();
    return e.problems();
  }

  static Problem onlyProblem(String yaml, int line, int column, String path, String message) {
    List<Problem> problems = problems(yaml);
    assertThat(problems).as("problems").hasSize(1);
    Problem p = problems.get(0);
    assertThat(p.toString()).contains(message);
    assertThat(p.path()).isEqualTo(path);
    assertThat(List.of(p.line(), p.column())).as(p.toString()).containsExactly(line, column);
    return p;
  }

  /** MEDIA with one step's lines replaced (steps start at line 16). */
  static String media(String from, String to) {
    assertThat(MEDIA).contains(from);
    return MEDIA.replace(from, to);
  }

  @Test
  void readsTheSeedPipeline() {
    PipelineFile f = load(MEDIA);
    assertThat(f.deployments()).hasSize(1);
    PipelineSpec p = f.pipelines().get(0);
    assertThat(p.name()).isEqualTo("media");
    assertThat(p.onNodeLoss()).isEqualTo(OnNodeLoss.RERUN);
    assertThat(p.maxReruns()).isEqualTo(2);
    assertThat(p.webhook()).isEqualTo("${input.done_url}");
    assertThat(p.steps()).extracting(StepSpec::name).containsExactly("fetch", "analyse", "describe", "callback");
    StepSpec fetch = p.steps().get(0);
    assertThat(fetch.action()).isEqualTo(new StepAction.Fetch("${input.media_uri}", 1048576));
    assertThat(fetch.resources()).isEqualTo(Resources.of("fetch_slot", 1));
    assertThat(fetch.placement()).isEqualTo(StepPlacement.SPREAD);
    assertThat(fetch.retries()).isEqualTo(2);
    StepSpec analyse = p.steps().get(1);
    assertThat(analyse.action()).isEqualTo(new StepAction.Infer("mlp", "fetch", InputFormat.RAW, ""));
    assertThat(analyse.placement()).as("an infer step is pinned to its input's node").isEqualTo(
        StepPlacement.sameNodeAs("fetch"));
    assertThat(p.steps().get(2).action()).isEqualTo(new StepAction.Custom(
        "io.kiln.pipelines.TestSteps$Echo", java.util.Map.of("from", "analyse", "who", "${input.who}")));
    assertThat(p.steps().get(2).placement()).isEqualTo(StepPlacement.DEFAULT);
    assertThat(p.steps().get(3).action()).isEqualTo(new StepAction.Webhook("${input.callback_url}", 5000));
    assertThat(p.steps().get(3).placement()).isEqualTo(StepPlacement.nodeWithResource("callback_slot"));
    assertThat(p.anchorOf(1)).isZero();
    assertThat(p.anchorOf(3)).isEqualTo(3);
  }

  @Test
  void shorthandsAndDefaults() {
    String yaml = DEPLOYMENT + """
        pipelines:
          - name: short
            steps:
              - {name: get, fetch: "file:///data/x.bin"}
              - {name: run, infer: {deployment: mlp, input: get, format: oip_json}, strategy: {same_node_as: get}}
              - {name: tell, webhook: "http://127.0.0.1:9/hook"}
        """;
    PipelineSpec p = load(yaml).pipelines().get(0);
    assertThat(p.onNodeLoss()).isEqualTo(OnNodeLoss.FAIL);
    assertThat(p.timeoutMs()).isEqualTo(PipelineSpec.DEFAULT_TIMEOUT_MS);
    assertThat(p.steps().get(0).action()).isEqualTo(new StepAction.Fetch("file:///data/x.bin",
        StepAction.DEFAULT_FETCH_MAX_BYTES));
    assertThat(p.steps().get(0).resources()).isEqualTo(Resources.NONE);
    assertThat(p.steps().get(1).action()).isEqualTo(new StepAction.Infer("mlp", "get", InputFormat.OIP_JSON, ""));
    assertThat(p.steps().get(2).action()).isEqualTo(new StepAction.Webhook("http://127.0.0.1:9/hook",
        StepAction.DEFAULT_WEBHOOK_TIMEOUT_MS));
  }

  @Test
  void aFileWithoutPipelinesLoadsAsBefore() {
    assertThat(load(DEPLOYMENT).pipelines()).isEmpty();
    assertThat(PipelineLoader.declaresPipelines(DEPLOYMENT)).isFalse();
    assertThat(PipelineLoader.declaresPipelines(MEDIA)).isTrue();
    // The deployment loader accepts the section (and leaves it to this loader).
    assertThat(new DeploymentLoader(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false))
        .load(MEDIA, SOURCE).deployments()).hasSize(1);
  }

  @Test
  void unknownStepKindIsAnUnknownFieldWithASuggestion() {
    List<Problem> ps = problems(media("      fetch: {uri: \"${input.media_uri}\", max_bytes: 1048576}",
        "      fetsch: {uri: \"${input.media_uri}\"}"));
    assertThat(ps).extracting(Problem::toString).containsExactly(
        "app.yaml:16:9: pipelines[0].steps[0]: a step needs one of fetch, infer, webhook, generate, class"
            + " (what it does)",
        "app.yaml:17:9: pipelines[0].steps[0].fetsch: unknown field 'fetsch'; did you mean 'fetch'?");
  }

  @Test
  void aStepDoesOneThing() {
    onlyProblem(media("        retries: 2\n", "        retries: 2\n        class: io.kiln.pipelines.TestSteps$Echo\n"),
        21, 9, "pipelines[0].steps[0]", "a step does one thing: it has both 'fetch' and 'class'");
  }

  @Test
  void sameNodeAsMustNameAnEarlierStep() {
    onlyProblem(media("      strategy: {node_with_resource: callback_slot}",
        "      strategy: {same_node_as: nope}"), 28, 34, "pipelines[0].steps[3].strategy.same_node_as",
        "no step named 'nope'; earlier steps: fetch, analyse, describe");
    onlyProblem(media("      strategy: spread\n", "      strategy: {same_node_as: callback}\n"), 19, 34,
        "pipelines[0].steps[0].strategy.same_node_as", "'callback' is a later step (steps[3]); same_node_as names a"
            + " step that ran before this one");
    onlyProblem(media("      strategy: spread\n", "      strategy: {same_node_as: fetch}\n"), 19, 34,
        "pipelines[0].steps[0].strategy.same_node_as", "a step cannot follow itself");
    onlyProblem(media("      strategy: {node_with_resource: callback_slot}", "      strategy: {same_node_as: fetc}"),
        28, 34, "pipelines[0].steps[3].strategy.same_node_as", "did you mean 'fetch'?");
  }

  @Test
  void strategyForms() {
    onlyProblem(media("      strategy: spread\n", "      strategy: spraed\n"), 19, 19,
        "pipelines[0].steps[0].strategy", "unknown strategy 'spraed'; did you mean 'spread'?");
    onlyProblem(media("      strategy: spread\n", "      strategy: {}\n"), 19, 19,
        "pipelines[0].steps[0].strategy", "needs same_node_as: STEP or node_with_resource: KEY");
    onlyProblem(media("      strategy: {node_with_resource: callback_slot}",
        "      strategy: {node_with_resource: callback_slot, same_node_as: fetch}"), 28, 19,
        "pipelines[0].steps[3].strategy", "either same_node_as or node_with_resource, not both");
  }

  @Test
  void aStepsResourcesAreReadAsAPoolsWorkerResourcesAre() {
    // A node has CPU, not cpu: a step asking for cpu would never be placed, so it is refused as a pool's would be.
    onlyProblem(media("resources: {fetch_slot: 1}", "resources: {cpu: 1}"), 18, 21,
        "pipelines[0].steps[0].resources.cpu", "unknown resource 'cpu'; did you mean 'CPU'? (resource names are"
            + " case-sensitive)");
    onlyProblem(media("      strategy: {node_with_resource: callback_slot}", "      strategy: {node_with_resource: gpu}"),
        28, 40, "pipelines[0].steps[3].strategy.node_with_resource", "did you mean 'GPU'?");
    onlyProblem(media("resources: {fetch_slot: 1}", "resources: {GPU: 1.5}"), 18, 26,
        "pipelines[0].steps[0].resources.GPU", "GPU above 1 must be a whole number, got 1.5");
    // memory is in bytes, as a node declares it: far above the million the step reader once capped amounts at.
    StepSpec fetch = load(media("resources: {fetch_slot: 1}", "resources: {memory: 2000000000, nvidia.com/gpu: 1}"))
        .pipelines().get(0).steps().get(0);
    assertThat(fetch.resources()).isEqualTo(Resources.NONE.withMemory(2_000_000_000L).with("nvidia.com/gpu", 1));
  }

  @Test
  void inferNeedsAKnownDeploymentAndItsInputsNode() {
    onlyProblem(media("infer: {deployment: mlp}", "infer: {deployment: mpl}"), 22, 29,
        "pipelines[0].steps[1].infer.deployment", "unknown deployment 'mpl'; did you mean 'mlp'?; known deployments: mlp");
    // A deployment already in the cluster counts.
    assertThat(LOADER.load(media("infer: {deployment: mlp}", "infer: {deployment: other}"), SOURCE,
        Set.of("other")).pipelines()).hasSize(1);
    onlyProblem(media("        infer: {deployment: mlp}\n",
        "        infer: {deployment: mlp}\n        strategy: spread\n"), 23, 19, "pipelines[0].steps[1].strategy", "its strategy must be same_node_as: fetch (or omitted)");
    onlyProblem(media("infer: {deployment: mlp}", "infer: {deployment: mlp, input: describe}"), 22, 41,
        "pipelines[0].steps[1].infer.input", "input 'describe' must name an earlier fetch step");
  }

  @Test
  void inferWithoutAFetchBeforeIt() {
    String yaml = DEPLOYMENT + """
        pipelines:
          - name: p
            steps:
              - {name: run, infer: {deployment: mlp}}
        """;
    onlyProblem(yaml, 13, 28, "pipelines[0].steps[0].infer.input", "add a fetch step before it");
  }

  @Test
  void userStepClassesAreChecked() {
    onlyProblem(media("TestSteps$Echo", "TestSteps$NotAStep"), 24, 16, "pipelines[0].steps[2].class",
        "does not implement io.kiln.pipelines.Step");
    onlyProblem(media("TestSteps$Echo", "TestSteps$NoDefaultConstructor"), 24, 16, "pipelines[0].steps[2].class",
        "needs a public constructor without arguments");
    onlyProblem(media("io.kiln.pipelines.TestSteps$Echo", "com.example.Missing"), 24, 16,
        "pipelines[0].steps[2].class", "class com.example.Missing is not on the classpath");
    onlyProblem(media("io.kiln.pipelines.TestSteps$Echo", "not a class"), 24, 16,
        "pipelines[0].steps[2].class", "is not a Java class name");
    // Unchecked where classes live elsewhere.
    PipelineLoader unchecked = new PipelineLoader(PipelineLoader.Options.DEFAULT.withCheckClasses(false)
        .withDeployments(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false)));
    assertThat(unchecked.load(media("io.kiln.pipelines.TestSteps$Echo", "com.example.Missing"), SOURCE,
        Set.of()).pipelines()).hasSize(1);
    onlyProblem(media("        webhook: {url:", "        params: {a: b}\n        webhook: {url:"), 27, 9,
        "pipelines[0].steps[3].params", "only class steps take params");
  }

  @Test
  void placeholdersAndUris() {
    onlyProblem(media("${input.media_uri}", "${env.HOME}"), 17, 22, "pipelines[0].steps[0].fetch.uri",
        "placeholder '${env.HOME}' is not of the form ${input.NAME}");
    onlyProblem(media("\"${input.media_uri}\"", "\"ftp://host/x\""), 17, 22, "pipelines[0].steps[0].fetch.uri",
        "only file://, http:// and https:// URIs can be fetched");
    onlyProblem(media("{url: \"${input.callback_url}\"", "{url: \"mailto:x@y\""), 27, 24,
        "pipelines[0].steps[3].webhook.url", "a webhook URL must start with http:// or https://");
    onlyProblem(media("who: \"${input.who}\"", "who: \"${input.who\""), 25, 38,
        "pipelines[0].steps[2].params.who", "unclosed placeholder");
  }

  @Test
  void pipelineFields() {
    onlyProblem(media("on_node_loss: rerun", "on_node_loss: rerum"), 12, 19, "pipelines[0].on_node_loss",
        "unknown on_node_loss 'rerum'; did you mean 'rerun'?");
    onlyProblem(media("max_reruns: 2", "max_reruns: 11"), 13, 17, "pipelines[0].max_reruns", "must be at most 10");
    onlyProblem(media("  - name: media", "  - name: Media"), 11, 11, "pipelines[0].name", "not a valid pipeline name");
    onlyProblem(media("      retries: 2", "      retries: -1"), 20, 18, "pipelines[0].steps[0].retries",
        "must be at least 0");
    onlyProblem(media("resources: {fetch_slot: 1}", "resources: {fetch_slot: -1}"), 18, 33,
        "pipelines[0].steps[0].resources.fetch_slot", "resource fetch_slot must be a finite non-negative number");
    onlyProblem(media("    max_reruns: 2\n", "    max_reruns: 2\n    colour: blue\n"), 14, 5, "pipelines[0].colour",
        "unknown field 'colour'");
  }

  @Test
  void duplicateNames() {
    onlyProblem(media("    - name: describe", "    - name: fetch"), 23, 15, "pipelines[0].steps[2].name",
        "duplicate step name 'fetch' (also pipelines[0].steps[0])");
    String twice = MEDIA + MEDIA.substring(MEDIA.indexOf("  - name: media"));
    assertThat(problems(twice)).extracting(Problem::message)
        .containsExactly("duplicate pipeline 'media' (also pipelines[0])");
  }

  @Test
  void deploymentAndPipelineProblemsAreReportedTogether() {
    String yaml = media("    version: \"1\"", "    version: \"1 x\"").replace("on_node_loss: rerun",
        "on_node_loss: maybe");
    assertThat(problems(yaml)).extracting(Problem::path)
        .containsExactly("deployments[0].version", "pipelines[0].on_node_loss");
  }

  @Test
  void pipelinesMustBeAList() {
    onlyProblem(DEPLOYMENT + "pipelines: {name: x}\n", 10, 12, "pipelines", "expected a list, got a mapping");
  }

  /** A graph of the file's deployment, called twice in a row. */
  static final String GRAPH = """
      graphs:
        - name: twice
          inputs: [{name: v, datatype: FP32, shape: [-1, 4]}]
          steps:
            - {name: one, model: mlp, input_map: {input: input.v}}
            - {name: two, model: mlp, input_map: {input: one.output}}
          outputs: [{name: out, datatype: FP32, shape: [-1, 4], from: two.output}]
      """;

  /** {@code infer} as the MEDIA pipeline's analyse step, with the graph declared; problems on its line. */
  static String withGraph(String infer) {
    return DEPLOYMENT + GRAPH + MEDIA.substring(DEPLOYMENT.length()).replace("infer: {deployment: mlp}", infer);
  }

  static void inferProblem(String infer, String token, String path, String message) {
    String yaml = withGraph(infer);
    List<String> lines = List.of(yaml.split("\n"));
    int line = lines.indexOf(lines.stream().filter(l -> l.contains(infer)).findFirst().orElseThrow()) + 1;
    onlyProblem(yaml, line, lines.get(line - 1).indexOf(token) + 1, path, message);
  }

  @Test
  void anInferStepMayCallAGraphOfTheFileOrOneAlreadyApplied() {
    PipelineFile f = load(withGraph("infer: {graph: twice, tensor: v}"));
    assertThat(f.graphs()).extracting(g -> g.name()).containsExactly("twice");
    assertThat(f.pipelines().get(0).steps().get(1).action())
        .isEqualTo(new StepAction.Infer("twice", "fetch", InputFormat.RAW, "v", true));
    String stored = MEDIA.replace("infer: {deployment: mlp}", "infer: {graph: stored}");
    assertThat(LOADER.load(stored, SOURCE, new DeploymentLoader.Known(Set.of(), n -> java.util.Optional.empty(),
        Set.of("stored"))).pipelines().get(0).steps().get(1).action())
        .isEqualTo(new StepAction.Infer("stored", "fetch", InputFormat.RAW, "", true));

    inferProblem("infer: {graph: twcie}", "twcie", "pipelines[0].steps[1].infer.graph",
        "unknown graph 'twcie'; did you mean 'twice'?; known graphs: twice");
    inferProblem("infer: {graph: mlp}", "mlp", "pipelines[0].steps[1].infer.graph",
        "unknown graph 'mlp'; 'mlp' is a deployment: write deployment: mlp");
    inferProblem("infer: {deployment: twice}", "twice", "pipelines[0].steps[1].infer.deployment",
        "unknown deployment 'twice'; 'twice' is a graph: write graph: twice");
    inferProblem("infer: {graph: twice, deployment: mlp}", "graph", "pipelines[0].steps[1].infer.graph",
        "an infer step calls a deployment or a graph, not both");
  }

  @Test
  void graphAndPipelineProblemsAreReportedTogether() {
    String yaml = withGraph("infer: {graph: twice}").replace("model: mlp, input_map: {input: one.output}",
        "model: mpl, input_map: {input: one.output}").replace("on_node_loss: rerun", "on_node_loss: maybe");
    assertThat(problems(yaml)).extracting(Problem::path)
        .containsExactly("graphs[0].steps[1].model", "pipelines[0].on_node_loss");
  }
}
