package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.kiln.pools.DataType;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.YamlDocuments;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.nodes.Node;

/**
 * The {@code graphs:} section: a valid graph read into its spec (and through its stored JSON), and each problem at its
 * line and column: an unknown step model, a source naming a later step, the step itself, an unknown output or graph
 * input, a datatype or shape mismatch between producer and reader, an unmapped model input, a graph named like a
 * deployment, a deployment named like a stored graph, an unused graph input.
 */
@Tag("slow")
class GraphYamlTest {

  /** Lines 1-26: three builtin deployments whose tensors the graphs below map. */
  static final String DEPLOYMENTS = """
      deployments:
        - name: first
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
          pool: {workers_per_node: 1}
        - name: pair
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: a, datatype: FP32, shape: [-1, 4]}, {name: b, datatype: INT64, shape: [-1, 4]}]
            outputs: [{name: a.out, datatype: FP32, shape: [-1, 4]}, {name: b_out, datatype: INT64, shape: [-1, 4]}]
          pool: {workers_per_node: 1}
        - name: rows
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: r, datatype: FP32, shape: [-1, -1, 4]}]
            outputs: [{name: r_out, datatype: FP32, shape: [-1, -1, 4]}]
          pool: {workers_per_node: 1}
      graphs:
      """;

  static final String VALID = DEPLOYMENTS + """
        - name: chain
          inputs:
            - {name: v, datatype: FP32, shape: [-1, -1, 4]}
            - {name: n, datatype: INT64, shape: [-1, 4]}
          steps:
            - name: unbatch
              model: rows
              input_map: {r: input.v}
            - name: one
              model: first
              input_map: {x: "unbatch.r_out[0]"}
            - name: both
              model: pair
              input_map:
                b: input.n
                a: one.y
          outputs:
            - {name: left, datatype: FP32, shape: [-1, 4], from: both.a.out}
            - {name: right, datatype: INT64, shape: [-1, 4], from: both.b_out}
            - {name: middle, datatype: FP32, shape: [-1, 4], from: one.y}
      """;

  static List<GraphSpec> load(String yaml, DeploymentLoader.Known known) {
    Problems problems = new Problems("app.yaml");
    Node root = YamlDocuments.compose(yaml, 1 << 20, problems);
    List<DeploymentSpec> deployments = Specs.LOADER.readDeployments(root, problems, null);
    List<GraphSpec> graphs = Specs.LOADER.readGraphs(root, problems, deployments, known);
    problems.throwIfAny();
    return graphs;
  }

  static List<Problem> problems(String yaml) {
    return problems(yaml, DeploymentLoader.Known.NONE);
  }

  static List<Problem> problems(String yaml, DeploymentLoader.Known known) {
    return catchThrowableOfType(DeploymentValidationException.class, () -> load(yaml, known)).problems();
  }

  /**
   * Asserts the file's one problem: {@code message} at the first line holding {@code line}, at the column where
   * {@code token} starts on it.
   */
  static void assertOne(String yaml, String line, String token, String message) {
    String[] lines = yaml.split("\n", -1);
    int at = java.util.Arrays.asList(lines).indexOf("graphs:"); // the problems asserted so are in the graphs
    while (at < lines.length && !lines[at].contains(line)) {
      at++;
    }
    assertThat(at).as("a line holding '" + line + "'").isLessThan(lines.length);
    int row = at + 1;
    int column = lines[at].indexOf(token, lines[at].indexOf(line)) + 1;
    assertThat(problems(yaml)).singleElement().satisfies(p -> {
      assertThat(p.message()).contains(message);
      assertThat(p.line()).as(p.toString()).isEqualTo(row);
      assertThat(p.column()).as(p.toString()).isEqualTo(column);
    });
  }

  @Test
  void aValidGraphReadsIntoItsSpecAndSurvivesItsStoredJson() throws Exception {
    GraphSpec g = load(VALID, DeploymentLoader.Known.NONE).get(0);

    assertThat(g.name()).isEqualTo("chain");
    assertThat(g.version()).isEqualTo(GraphSpec.DEFAULT_VERSION);
    assertThat(g.steps()).extracting(GraphSpec.Step::name).containsExactly("unbatch", "one", "both");
    assertThat(g.deployments()).containsExactly("rows", "first", "pair");
    GraphSpec.Step both = g.step("both");
    assertThat(both.inputMap().keySet()).as("the file's order").containsExactly("b", "a");
    assertThat(both.inputMap().get("b")).isEqualTo(new GraphSpec.Source(GraphSpec.REQUEST, "n", -1));
    assertThat(g.step("one").inputMap().get("x")).isEqualTo(new GraphSpec.Source("unbatch", "r_out", 0));
    assertThat(g.outputs().get(0).from()).as("the first '.' ends the step").isEqualTo(
        new GraphSpec.Source("both", "a.out", -1));
    assertThat(g.signature().inputs()).containsExactly(new TensorSpec("v", DataType.FP32, new long[] {-1, -1, 4}),
        new TensorSpec("n", DataType.INT64, new long[] {-1, 4}));
    assertThat(g.signature().outputNames()).containsExactly("left", "right", "middle");
    assertThat(g.outputsRead()).containsExactly(Map.entry("unbatch", Set.of("r_out")), Map.entry("one", Set.of("y")),
        Map.entry("both", Set.of("a.out", "b_out")));

    String json = WireCodec.json().writeValueAsString(g);
    assertThat(json).contains("\"unbatch.r_out[0]\"");
    assertThat(WireCodec.json().readValue(json, GraphSpec.class)).isEqualTo(g);
  }

  @Test
  void aStepMayCallADeploymentAlreadyDeployedAndIsCheckedAgainstItsSignature() {
    DeploymentSpec deployed = Specs.LOADER.load(DEPLOYMENTS.replace("graphs:\n", ""), Specs.SOURCE).deployments()
        .get(0);
    String yaml = Specs.MINIMAL + """
        graphs:
          - name: g
            inputs: [{name: v, datatype: INT32, shape: [-1, 4]}]
            steps:
              - {name: s, model: first, input_map: {x: input.v}}
            outputs: [{name: o, datatype: FP32, shape: [-1, 4], from: s.y}]
        """;
    List<Problem> problems = problems(yaml, new DeploymentLoader.Known(Set.of("first"),
        name -> name.equals("first") ? Optional.of(deployed) : Optional.empty(), Set.of()));
    assertThat(problems).singleElement().satisfies(p -> {
      assertThat(p.message()).isEqualTo("datatype mismatch: input.v is INT32 but input 'x' of first is FP32");
      assertThat(p.line()).isEqualTo(15);
    });
  }

  @Test
  void anUnknownStepModelIsReportedWithASuggestion() {
    assertOne(VALID.replace("model: first", "model: frist"), "model: frist", "frist",
        "unknown deployment 'frist'; did you mean 'first'?");
  }

  @Test
  void aSourceMustBeAnEarlierStepsDeclaredOutput() {
    assertOne(VALID.replace("{r: input.v}", "{r: one.y}"), "{r: one.y}", "one.y",
        "'one' is a later step (steps[1]); a step reads the outputs of the steps before it");
    assertOne(VALID.replace("{x: \"unbatch.r_out[0]\"}", "{x: one.y}"), "{x: one.y}", "one.y",
        "a step cannot read its own outputs");
    assertOne(VALID.replace("from: one.y}", "from: one.z}"), "one.z", "one.z",
        "step 'one' (first) has no output 'z'; did you mean 'y'?; its outputs: y");
    assertOne(VALID.replace("from: one.y}", "from: onne.y}"), "onne.y", "onne.y",
        "no step named 'onne'; did you mean 'one'?");
    assertOne(VALID.replace("b: input.n", "b: input.m"), "b: input.m", "input.m", "the graph has no input 'm'");
    assertOne(VALID.replace("b: input.n", "b: input"), "b: input", "input", "'input' is not a source");
  }

  @Test
  void aDatatypeOrShapeMismatchBetweenProducerAndReaderIsReported() {
    assertOne(VALID.replace("a: one.y", "a: input.n"), "a: input.n", "input.n",
        "datatype mismatch: input.n is INT64 but input 'a' of pair is FP32");
    assertOne(VALID.replace("{x: \"unbatch.r_out[0]\"}", "{x: unbatch.r_out}"), "{x: unbatch.r_out}", "unbatch",
        "shape mismatch: unbatch.r_out is [-1, -1, 4] but input 'x' of first takes [-1, 4]; to pass one row of it,"
            + " write unbatch.r_out[0]");
    assertOne(VALID.replace("shape: [-1, 4], from: both.b_out", "shape: [-1, 5], from: both.b_out"), "both.b_out",
        "both.b_out", "shape mismatch: both.b_out is [-1, 4] but the graph's output 'right' takes [-1, 5]");
  }

  @Test
  void everyInputOfAStepsModelIsMappedAndOnlyThose() {
    assertOne(VALID.replace("    b: input.n\n", "    c: input.n\n"), "c: input.n", "c", "pair has no input 'c'");
    assertOne(VALID.replace("          b: input.n\n", ""), "a: one.y", "a",
        "input 'b' of pair is not mapped; map every input the model declares");
    assertOne(VALID.replace("          b: input.n\n", "          b: one.b\n").replace("one.b", "input.n")
        .replace("{name: v, datatype: FP32, shape: [-1, -1, 4]}", "{name: v, datatype: FP32, shape: [-1, -1, 4]}\n"
            + "      - {name: unused, datatype: FP32, shape: [-1]}"), "- {name: unused", "{",
        "input 'unused' is read by no step and no output; map it (input.unused) or remove it");
  }

  @Test
  void namesOfGraphsStepsAndFieldsAreChecked() {
    assertOne(VALID.replace("- name: chain", "- name: first"), "- name: first", "first",
        "'first' is a deployment's name");
    assertThat(problems(VALID.replace("- name: both", "- name: one "))).first().satisfies(p -> {
      assertThat(p.message()).isEqualTo("duplicate step name 'one' (also steps[1])");
      assertThat(p.line()).isEqualTo(38);
    });
    assertThat(problems(VALID.replace("- name: unbatch", "- name: input"))).first().satisfies(p -> {
      assertThat(p.message()).startsWith("'input' names the request's inputs");
      assertThat(p.line()).isEqualTo(32);
      assertThat(p.column()).isEqualTo(15);
    });
    assertThat(problems(VALID.replace("input_map: {r: input.v}", "inputs: {r: input.v}")))
        .extracting(Problem::message)
        .anySatisfy(m -> assertThat(m).startsWith("unknown field 'inputs'"))
        .anySatisfy(m -> assertThat(m).startsWith("missing required field 'input_map'"));
    List<Problem> stored = problems(VALID.replace("- name: chain", "- name: other"),
        new DeploymentLoader.Known(Set.of(), n -> Optional.empty(), Set.of("pair")));
    assertThat(stored).singleElement().satisfies(p -> {
      assertThat(p.message()).contains("'pair' is the name of a graph already applied");
      assertThat(p.line()).isEqualTo(10);
      assertThat(p.column()).isEqualTo(11);
    });
  }

  @Test
  void everyProblemOfAFileIsReportedAtOnce() {
    String yaml = VALID.replace("model: first", "model: frist").replace("a: one.y", "a: input.n")
        .replace("from: both.b_out}", "from: both.c}");
    List<Problem> problems = problems(yaml);
    assertThat(problems).hasSize(3);
    assertThat(problems).extracting(Problem::line).isSorted();
  }
}
