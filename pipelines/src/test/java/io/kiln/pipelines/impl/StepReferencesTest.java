package io.kiln.pipelines.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pipelines.StepResult;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Filling {@code ${input.NAME}} and {@code {{STEP.FIELD}}} in one pass from a run's input and step results. */
class StepReferencesTest {

  static final StepResult OCR = new StepResult("ocr", "n1", Map.of("graph", "ocr-read", "outputs", List.of(
      Map.of("name", "text", "datatype", "BYTES", "shape", List.of(2), "data", List.of("Hello", "Kiln")),
      Map.of("name", "boxes", "datatype", "FP32", "shape", List.of(1, 2), "data", List.of(1.5, 2.0)),
      Map.of("name", "big", "datatype", "FP32", "shape", List.of(9), "data_omitted", true))));
  static final StepResult FETCH = new StepResult("fetch", "n1", Map.of("uri", "http://x/a.png", "bytes", 42));

  @Test
  void fillsInputsAndOutputsInOnePass() {
    String text = StepReferences.render("Page ${input.title} from {{fetch.uri}} ({{ fetch.bytes }} bytes):\n"
        + "{{ocr.text}}\nboxes {{ocr.boxes}} by {{ocr.graph}}", Map.of("title", "{{ocr.text}}"),
        Map.of("ocr", OCR, "fetch", FETCH));
    assertThat(text).as("an input that looks like a reference stays text").isEqualTo(
        "Page {{ocr.text}} from http://x/a.png (42 bytes):\nHello\nKiln\nboxes 1.5\n2.0 by ocr-read");
  }

  @Test
  void aMissingFieldOrStepOrInputIsNamed() {
    assertThatThrownBy(() -> StepReferences.render("{{ocr.txt}}", Map.of(), Map.of("ocr", OCR)))
        .hasMessage("step 'ocr' has no field 'txt'; it has: big, boxes, graph, text");
    assertThatThrownBy(() -> StepReferences.render("{{ocr.big}}", Map.of(), Map.of("ocr", OCR)))
        .hasMessageContaining("output 'big' of step 'ocr' carries no data");
    assertThatThrownBy(() -> StepReferences.render("{{gone.text}}", Map.of(), Map.of("ocr", OCR)))
        .hasMessageContaining("step 'gone' has no result in this run");
    assertThatThrownBy(() -> StepReferences.render("${input.title}", Map.of(), Map.of()))
        .hasMessage("the run's input has no field 'title'");
  }

  @Test
  void malformedTextIsFoundBeforeAnyRun() {
    assertThat(StepReferences.problem("plain {{a.b}} and ${input.c}")).isNull();
    assertThat(StepReferences.refs("{{ a.b }} {{c.d.e}}")).containsExactly(new StepReferences.Ref("a", "b",
        "{{ a.b }}"), new StepReferences.Ref("c", "d.e", "{{c.d.e}}"));
    assertThat(StepReferences.problem("{{a}}")).contains("not of the form {{STEP.FIELD}}");
    assertThat(StepReferences.problem("{{a.b")).contains("unclosed reference");
    assertThat(StepReferences.problem("${env.HOME}")).contains("not of the form ${input.NAME}");
  }

  @Test
  void aFilledTextIsBounded() {
    String big = "x".repeat(StepReferences.MAX_RENDERED_CHARS);
    assertThatThrownBy(() -> StepReferences.render("{{fetch.uri}}{{fetch.uri}}", Map.of(),
        Map.of("fetch", new StepResult("fetch", "n", Map.of("uri", big)))))
        .hasMessageContaining("longer than " + StepReferences.MAX_RENDERED_CHARS);
  }
}
