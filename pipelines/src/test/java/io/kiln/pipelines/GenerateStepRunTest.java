package io.kiln.pipelines;

import static io.kiln.pipelines.PipelineCluster.HEAD;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.TextModels;
import io.kiln.runtime.Resources;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Generate steps in runs on two nodes, against {@code builtin:chunks} (a streaming model that answers each request
 * with 4 chunks, each echoing its {@code text_input} as {@code text_output}): the prompt is filled on the step's node
 * from the run's input and the earlier steps' results, sent as the text contract's request (chat: one user message),
 * the chunks gathered in order into {@code text}; the callback gets every result with its timings, in run order; a
 * generate step whose deployment has no ready version fails the run naming it. The real chat model's text is checked
 * token for token against the OpenAI API in deploy's {@code OcrReportEndToEndTest}.
 */
@Tag("slow")
class GenerateStepRunTest {

  static final ModelSpec ECHO = ModelSpec.builder().uri("builtin:chunks").engine(ModelSpec.ENGINE_BUILTIN)
      .inputs(List.of(new TensorSpec(TextModels.TEXT_INPUT, DataType.BYTES, new long[] {-1})))
      .outputs(List.of(new TensorSpec(TextModels.TEXT_OUTPUT, DataType.BYTES, new long[] {-1})))
      .streaming(true).build();

  @TempDir
  static Path tmp;
  static PipelineCluster c;

  @BeforeAll
  static void start() throws Exception {
    c = new PipelineCluster(tmp, List.of(tmp), Map.of("echo", ECHO), HEAD, "w1");
    StepSpec fetch = new StepSpec("fetch", new StepAction.Fetch("${input.uri}", 1 << 20), Resources.NONE,
        StepPlacement.SPREAD, 0, 60_000);
    StepSpec callback = new StepSpec("callback", new StepAction.Webhook(c.url("/hook/callback"), 10_000),
        Resources.NONE, StepPlacement.DEFAULT, 0, 60_000);
    result(c.pipelines(HEAD).apply(List.of(
        new PipelineSpec("text", List.of(fetch, generate("summary", "echo", "Page ${input.title}: {{fetch.bytes}}"
            + " bytes, {{fetch.sha256}}", false), generate("again", "echo", "<{{summary.finish_reason}}>", true),
            callback), OnNodeLoss.FAIL, 0, "", 60_000),
        new PipelineSpec("missing", List.of(fetch, generate("summary", "gone", "{{fetch.uri}}", false)),
            OnNodeLoss.FAIL, 0, "", 60_000))));
  }

  static StepSpec generate(String name, String deployment, String prompt, boolean chat) {
    return new StepSpec(name, new StepAction.Generate(deployment, prompt, chat, 8, 0, null, null, null, null),
        Resources.NONE, StepPlacement.sameNodeAs("fetch"), 0, 60_000);
  }

  @AfterAll
  static void stop() {
    c.close();
  }

  @Test
  void thePromptIsFilledOnTheFetchingNodeAndTheChunksGathered() throws Exception {
    Path media = c.mediaFile("page", 2);
    String uri = media.toUri().toString();
    // An input that looks like a reference stays text: inputs and references are filled in one pass.
    String id = result(c.pipelines("w1").startRun("text", RunRequest.of(Map.of("uri", uri, "title",
        "{{fetch.uri}}"))));
    RunStatus s = c.awaitEnd(HEAD, id);
    assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
    StepStatus fetch = s.step("fetch").orElseThrow();
    String prompt = "Page {{fetch.uri}}: 32 bytes, " + fetch.output().get("sha256");
    StepStatus summary = s.step("summary").orElseThrow();
    assertThat(summary.nodeId()).isEqualTo(fetch.nodeId());
    assertThat(summary.output()).containsEntry("prompt", prompt).containsEntry("deployment", "echo")
        .containsEntry("version", "1").containsEntry("node", fetch.nodeId()).containsEntry("finish_reason", "")
        .containsEntry("text", prompt.repeat(4)); // builtin:chunks' 4 chunks, each the prompt as sent (format text)
    // Chat: the prompt travels as the contract's one user message, which the echo returns as it came.
    String chat = new JsonArray().add(new JsonObject().put("role", "user").put("content", "<>")).encode();
    assertThat(new JsonArray(s.step("again").orElseThrow().output().get("text").toString().substring(0,
        chat.length()))).isEqualTo(new JsonArray(chat));

    await().atMost(Duration.ofSeconds(30)).until(() -> c.callbacks.stream().anyMatch(b -> id.equals(
        b.getString("run_id"))));
    JsonObject report = c.callbacks.stream().filter(b -> id.equals(b.getString("run_id"))).findFirst().orElseThrow();
    assertThat(report.getJsonObject("results").fieldNames()).containsExactly("fetch", "summary", "again");
    assertThat(report.getJsonObject("results").getJsonObject("summary").getString("text")).isEqualTo(prompt.repeat(4));
    JsonObject timings = report.getJsonObject("timings");
    assertThat(timings.fieldNames()).containsExactly("fetch", "summary", "again");
    for (String step : timings.fieldNames()) {
      JsonObject t = timings.getJsonObject(step);
      assertThat(t.getString("node")).isEqualTo(fetch.nodeId());
      assertThat(t.getLong("started_at_ms")).isEqualTo(s.step(step).orElseThrow().startedAtMs());
      assertThat(t.getLong("ended_at_ms")).isEqualTo(s.step(step).orElseThrow().endedAtMs());
      assertThat(t.getLong("took_ms")).isEqualTo(t.getLong("ended_at_ms") - t.getLong("started_at_ms"));
    }
  }

  @Test
  void aDeploymentWithoutAReadyVersionFailsTheRunNamingIt() throws Exception {
    String uri = c.mediaFile("other", 1).toUri().toString();
    RunStatus s = c.awaitEnd(HEAD, result(c.pipelines(HEAD).startRun("missing", RunRequest.of(Map.of("uri", uri)))));
    assertThat(s.state()).isEqualTo(RunState.FAILED);
    assertThat(s.error()).contains("step 'summary'").contains("deployment 'gone' has no version ready to serve");
  }
}
