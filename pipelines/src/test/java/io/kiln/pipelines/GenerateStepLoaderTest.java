package io.kiln.pipelines;

import static io.kiln.pipelines.PipelineLoaderTest.load;
import static io.kiln.pipelines.PipelineLoaderTest.onlyProblem;
import static io.kiln.pipelines.PipelineLoaderTest.problems;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The generate step kind in the {@code pipelines:} section: what it builds, and each problem of its prompt's
 * {@code {{STEP.FIELD}}} references and settings at its line and column, with nothing loaded.
 */
@Tag("slow")
class GenerateStepLoaderTest {

  /** A graph whose output is {@code text}, and a streaming model keeping the text generation contract. */
  static final String MODELS = """
      deployments:
        - name: reader
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: image, datatype: UINT8, shape: [-1, -1]}]
            outputs: [{name: text, datatype: UINT8, shape: [-1, -1]}]
          pool: {workers_per_node: 1}
        - name: chat
          version: "1"
          model:
            uri: .
            engine: Python
            streaming: true
            python: {class: Chat, interpreter: python3}
            inputs:  [{name: text_input, datatype: BYTES, shape: [-1]}]
            outputs:
              - {name: text_output, datatype: BYTES, shape: [-1]}
              - {name: finish_reason, datatype: BYTES, shape: [-1]}
              - {name: prompt_tokens, datatype: INT32, shape: [-1]}
              - {name: completion_tokens, datatype: INT32, shape: [-1]}
          pool: {workers_per_node: 1}
          batching: {max_batch_size: 1}
      graphs:
        - name: read
          inputs: [{name: image, datatype: UINT8, shape: [-1, -1]}]
          steps:
            - {name: r, model: reader, input_map: {image: input.image}}
          outputs:
            - {name: lines, datatype: UINT8, shape: [-1, -1], from: r.text}
      """;

  /** Line 32 is "pipelines:"; the summary step's prompt is on line 41. */
  static final String PIPELINE = MODELS + """
      pipelines:
        - name: report
          steps:
            - name: fetch
              fetch: "${input.image_uri}"
            - name: ocr
              infer: {graph: read, input: fetch, tensor: image}
            - name: summary
              generate:
                prompt: "Summarise this page of ${input.title}:\\n{{ ocr.lines }}"
                deployment: chat
                max_tokens: 24
                temperature: 0.5
                top_p: 0.9
                top_k: 40
                seed: 7
                stop: ["\\n\\n"]
            - name: callback
              webhook: "${input.callback_url}"
      """;

  static String with(String from, String to) {
    assertThat(PIPELINE).contains(from);
    return PIPELINE.replace(from, to);
  }

  /** The one problem of {@code yaml}, at the line and column where {@code written} stands in it. */
  static void atReference(String yaml, String written, String message) {
    String[] lines = yaml.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      int k = lines[i].indexOf(written);
      if (k >= 0) {
        onlyProblem(yaml, i + 1, k + 1, "pipelines[0].steps[2].generate.prompt", message);
        return;
      }
    }
    throw new AssertionError("no '" + written + "' in\n" + yaml);
  }

  @Test
  void readsAGenerateStepWithItsSettings() {
    PipelineSpec p = load(PIPELINE).pipelines().get(0);
    StepSpec summary = p.steps().get(2);
    assertThat(summary.kind()).isEqualTo(StepKind.GENERATE);
    assertThat(summary.action()).isEqualTo(new StepAction.Generate("chat",
        "Summarise this page of ${input.title}:\n{{ ocr.lines }}", true, 24, 0.5, 0.9, 40, 7L, List.of("\n\n")));
    assertThat(summary.placement()).isEqualTo(StepPlacement.DEFAULT);
  }

  @Test
  void defaultsAreGreedyChatWithBoundedTokens() {
    String yaml = PIPELINE.replaceAll("(?m)^ {10}(max_tokens|temperature|top_p|top_k|seed|stop):.*\n", "");
    StepAction.Generate g = (StepAction.Generate) load(yaml).pipelines().get(0).steps().get(2).action();
    assertThat(g.chat()).isTrue();
    assertThat(g.temperature()).isZero();
    assertThat(g.maxTokens()).isEqualTo(StepAction.Generate.DEFAULT_MAX_TOKENS);
    assertThat(List.of(g.topP() == null, g.topK() == null, g.seed() == null, g.stop().isEmpty()))
        .containsOnly(true);
    assertThat(load(with("deployment: chat", "deployment: chat\n          format: text")).pipelines().get(0)
        .steps().get(2).action()).extracting("chat").isEqualTo(false);
  }

  @Test
  void aReferenceToAnUnknownStepFailsTheLoadAtThePrompt() {
    atReference(with("{{ ocr.lines }}", "{{ocrr.lines}}"), "{{ocrr.lines}}",
        "reference '{{ocrr.lines}}': no step named 'ocrr'; did you mean 'ocr'?; earlier steps: fetch, ocr");
  }

  @Test
  void aReferenceToAnUnknownFieldNamesTheFieldsThereAre() {
    atReference(with("{{ ocr.lines }}", "{{ocr.line}}"), "{{ocr.line}}",
        "step 'ocr' has no field 'line'; did you mean 'lines'?; its result has: deployment, graph, input_key, lines,");
    atReference(with("{{ ocr.lines }}", "{{fetch.text}}"), "{{fetch.text}}",
        "step 'fetch' has no field 'text'; its result has: bytes, key, node, path, sha256, uri");
  }

  @Test
  void aReferenceToALaterStepOrItselfIsRefused() {
    atReference(with("{{ ocr.lines }}", "{{callback.status}}"), "{{callback.status}}",
        "'callback' is a later step (steps[3]); a prompt reads steps that ran before this one");
    atReference(with("{{ ocr.lines }}", "{{summary.text}}"), "{{summary.text}}",
        "a step cannot read its own result");
  }

  @Test
  void aReferenceInAMultiLinePromptIsPlacedOnItsOwnLine() {
    String yaml = with("prompt: \"Summarise this page of ${input.title}:\\n{{ ocr.lines }}\"", """
        prompt: |
                    Title: ${input.title}
                    Source: {{fetch.uri}}, {{fetch.bytes}} bytes
                    Text: {{ocr.text}}
        """.strip());
    onlyProblem(yaml, 44, 19, "pipelines[0].steps[2].generate.prompt", "reference '{{ocr.text}}': step 'ocr' has no"
        + " field 'text'");
    assertThat(yaml.split("\n", -1)[43]).isEqualTo("            Text: {{ocr.text}}");
  }

  @Test
  void malformedReferencesAndPlaceholdersAreRefused() {
    onlyProblem(with("{{ ocr.lines }}", "{{ocr}}"), 41, 19, "pipelines[0].steps[2].generate.prompt",
        "reference '{{ocr}}' is not of the form {{STEP.FIELD}}");
    onlyProblem(with("{{ ocr.lines }}", "{{ocr.lines"), 41, 19, "pipelines[0].steps[2].generate.prompt",
        "unclosed reference");
    onlyProblem(with("${input.title}", "${title}"), 41, 19, "pipelines[0].steps[2].generate.prompt",
        "placeholder '${title}' is not of the form ${input.NAME}");
  }

  @Test
  void theDeploymentMustBeAKnownTextGenerationModel() {
    onlyProblem(with("deployment: chat", "deployment: chta"), 42, 23, "pipelines[0].steps[2].generate.deployment",
        "unknown deployment 'chta'; did you mean 'chat'?");
    onlyProblem(with("deployment: chat", "deployment: reader"), 42, 23, "pipelines[0].steps[2].generate.deployment",
        "deployment 'reader' is not a text generation model");
  }

  @Test
  void settingsOutOfRangeAreEachReported() {
    String yaml = with("temperature: 0.5", "temperature: 3").replace("top_p: 0.9", "top_p: 0")
        .replace("max_tokens: 24", "max_tokens: 0").replace("stop: [\"\\n\\n\"]", "stop: [a, b, c, d, e]")
        .replace("deployment: chat", "deployment: chat\n          format: json");
    assertThat(problems(yaml)).extracting(io.kiln.serve.Problem::path).containsExactlyInAnyOrder(
        "pipelines[0].steps[2].generate.format", "pipelines[0].steps[2].generate.max_tokens",
        "pipelines[0].steps[2].generate.temperature", "pipelines[0].steps[2].generate.top_p",
        "pipelines[0].steps[2].generate.stop");
    onlyProblem(with("seed: 7", "seeds: 7"), 47, 11, "pipelines[0].steps[2].generate.seeds", "seeds");
  }

  @Test
  void aSpecBuiltInCodeIsHeldToTheSameReferences() {
    StepSpec fetch = new StepSpec("fetch", new StepAction.Fetch("file:///x", 10), io.kiln.runtime.Resources.NONE,
        StepPlacement.DEFAULT, 0, 1000);
    StepSpec gen = new StepSpec("gen", new StepAction.Generate("chat", "{{later.text}}", true, 4, 0, null, null, null,
        null), io.kiln.runtime.Resources.NONE, StepPlacement.DEFAULT, 0, 1000);
    assertThatThrownBy(() -> new PipelineSpec("p", List.of(fetch, gen), OnNodeLoss.FAIL, 0, "", 1000))
        .hasMessageContaining("prompt reference '{{later.text}}' must name an earlier step");
    assertThatThrownBy(() -> new StepAction.Generate("chat", "x", true, 0, 0, null, null, null, null))
        .hasMessageContaining("max_tokens");
  }
}
