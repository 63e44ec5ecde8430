package io.kiln.pipelines;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static io.kiln.pipelines.PipelineCluster.HEAD;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One run's life on a single node: retries, failures, timeouts, input formats, refused requests. */
@Tag("slow")
class PipelineRunTest {

  @TempDir
  static Path tmp;
  static PipelineCluster c;

  @BeforeAll
  static void start() throws Exception {
    c = new PipelineCluster(tmp, HEAD);
    c.apply("""
        pipelines:
          - name: flaky
            steps:
              - name: once
                class: io.kiln.pipelines.TestSteps$Flaky
                params: {fail: "${input.fail}"}
                retries: 2
          - name: files
            steps:
              - {name: fetch, fetch: "${input.uri}"}
              - {name: analyse, infer: {deployment: ident, format: "oip_json"}}
          - name: raw
            steps:
              - {name: fetch, fetch: "${input.uri}"}
              - {name: analyse, infer: {deployment: ident}}
          - name: slow
            timeout_ms: 300
            steps:
              - name: hold
                class: io.kiln.pipelines.TestSteps$Hold
                params: {gate: slow-gate}
        """);
  }

  @AfterAll
  static void stop() {
    TestSteps.gate("slow-gate").countDown();
    c.close();
  }

  static RunStatus run(String pipeline, Map<String, String> input) {
    String id = result(c.pipelines(HEAD).startRun(pipeline, RunRequest.of(input)));
    return c.awaitEnd(HEAD, id);
  }

  @Test
  void failedAttemptsAreRetriedAndVisible() {
    RunStatus s = run("flaky", Map.of("fail", "2"));
    assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
    StepStatus once = s.step("once").orElseThrow();
    assertThat(once.attempts()).isEqualTo(3);
    assertThat(once.output()).containsEntry("attempt", 3);
    assertThat(s.events()).extracting(PipelineEvent::type).containsSubsequence("run_started", "step_queued",
        "step_failed", "step_retry", "step_queued", "step_failed", "step_retry", "step_queued", "step_succeeded",
        "run_succeeded");
    assertThat(s.events()).filteredOn(e -> e.type().equals("step_progress")).extracting(PipelineEvent::message)
        .containsExactly("succeeded on attempt 3");
    // The step's retries: 2 derive a policy from STEP_RETRY: its backoff, named in the events.
    assertThat(s.events()).filteredOn(e -> e.type().equals("step_retry")).extracting(PipelineEvent::message)
        .containsExactly("retry 1 of 2 in 100 ms (step-retry)", "retry 2 of 2 in 200 ms (step-retry)");
    assertThat(s.events()).extracting(PipelineEvent::seq).isSorted().doesNotHaveDuplicates();
  }

  @Test
  void aStepOutOfRetriesFailsTheRunNamingStepAndNode() {
    RunStatus s = run("flaky", Map.of("fail", "3"));
    assertThat(s.state()).isEqualTo(RunState.FAILED);
    assertThat(s.error()).isEqualTo("step 'once' failed after 3 attempt(s) (last on node head):"
        + " IllegalStateException: flaky failure 3");
    assertThat(s.step("once").orElseThrow().state()).isEqualTo(StepState.FAILED);
    assertThat(s.endedAtMs()).isGreaterThanOrEqualTo(s.createdAtMs());
  }

  @Test
  void oipJsonAndRawInputFiles() throws Exception {
    Path json = Files.writeString(Files.createDirectories(tmp.resolve("media")).resolve("req.json"), """
        {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [[1, 2, 3.5, -4]]}]}
        """);
    RunStatus s = run("files", Map.of("uri", json.toUri().toString()));
    assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
    Map<?, ?> out = (Map<?, ?>) ((java.util.List<?>) s.step("analyse").orElseThrow().output().get("outputs")).get(0);
    assertThat(out.get("shape")).isEqualTo(java.util.List.of(1, 4));
    assertThat(out.get("data")).isEqualTo(java.util.List.of(1.0, 2.0, 3.5, -4.0));

    Path raw = c.mediaFile("three-rows", 3);
    RunStatus r = run("raw", Map.of("uri", raw.toUri().toString()));
    assertThat(r.state()).as(r.error()).isEqualTo(RunState.SUCCEEDED);
    Map<?, ?> rawOut = (Map<?, ?>) ((java.util.List<?>) r.step("analyse").orElseThrow().output().get("outputs")).get(0);
    assertThat(rawOut.get("shape")).isEqualTo(java.util.List.of(3, 4));

    Path odd = Files.write(tmp.resolve("media").resolve("odd.f32"), new byte[10]);
    RunStatus bad = run("raw", Map.of("uri", odd.toUri().toString()));
    assertThat(bad.state()).isEqualTo(RunState.FAILED);
    assertThat(bad.error()).contains("a file of 10 bytes is not a whole number of rows of input 'input' [4] FP32"
        + " (16 bytes each)");
  }

  @Test
  void aRunPastItsTimeoutFails() {
    RunStatus s = run("slow", Map.of());
    assertThat(s.state()).isEqualTo(RunState.FAILED);
    assertThat(s.error()).startsWith("the run did not finish within its timeout of 300 ms (step 'hold' was");
    assertThat(s.step("hold").orElseThrow().state()).isEqualTo(StepState.FAILED);
  }

  @Test
  void refusedRequests() {
    Throwable t = failure(c.pipelines(HEAD).startRun("nope", RunRequest.of(Map.of())));
    assertThat(t).isInstanceOf(PipelineException.class).hasMessage("no pipeline named 'nope'");
    assertThat(((PipelineException) t).kind()).isEqualTo(PipelineException.Kind.NOT_FOUND);
    Throwable missing = failure(c.pipelines(HEAD).startRun("raw", RunRequest.of(Map.of())));
    assertThat(missing).hasMessage("cannot start pipeline 'raw': step 'fetch': the run's input has no field 'uri'");
    assertThat(((PipelineException) missing).kind()).isEqualTo(PipelineException.Kind.INVALID_INPUT);
    Throwable scheme = failure(c.pipelines(HEAD).startRun("raw", RunRequest.of(Map.of("uri", "gopher://x"))));
    assertThat(scheme).hasMessageContaining("only file://, http:// and https:// URIs can be fetched");
    RunStatus outside = run("raw", Map.of("uri", "file:///etc/passwd"));
    assertThat(outside.state()).isEqualTo(RunState.FAILED);
    assertThat(outside.error()).contains("is outside the folders this node may read inputs from");
  }
}
