package io.kiln.pipelines.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.DataType;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.Resources;
import io.kiln.runtime.WireCodec;
import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.InputFormat;
import io.kiln.pipelines.OnNodeLoss;
import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.RunState;
import io.kiln.pipelines.RunStatus;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepKind;
import io.kiln.pipelines.StepPlacement;
import io.kiln.pipelines.StepResult;
import io.kiln.pipelines.StepSpec;
import io.kiln.pipelines.StepState;
import io.kiln.pipelines.StepStatus;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What crosses nodes (CBOR) and what the cluster's maps hold (JSON) decodes to what was encoded. */
class WireFormsTest {

  static final PipelineSpec SPEC = new PipelineSpec("media", List.of(
      new StepSpec("fetch", new StepAction.Fetch("${input.uri}", 1000), Resources.of("fetch_slot", 1),
          StepPlacement.SPREAD, 2, 1000),
      new StepSpec("analyse", new StepAction.Infer("mlp", "fetch", InputFormat.RAW, ""), Resources.NONE,
          StepPlacement.sameNodeAs("fetch"), 0, 1000),
      new StepSpec("describe", new StepAction.Custom("a.B", Map.of("k", "v")), Resources.cpu(0.5),
          StepPlacement.DEFAULT, 0, 1000),
      new StepSpec("callback", new StepAction.Webhook("http://x", 500), Resources.NONE,
          StepPlacement.nodeWithResource("callback_slot"), 1, 1000)), OnNodeLoss.RERUN, 1, "", 60_000);

  @Test
  void pipelineSpecsRoundTripAsJson() {
    String json = WireCodec.toJson(SPEC);
    assertThat(json).contains("\"kind\":\"fetch\"").contains("\"onNodeLoss\":\"rerun\"").doesNotContain("io.kiln");
    assertThat(WireCodec.fromJson(json, PipelineSpec.class)).isEqualTo(SPEC);
  }

  @Test
  void stepInvocationsAndOutcomesRoundTripAsCbor() throws Exception {
    ObjectMapper cbor = WireCodec.cbor();
    StepInvocation inv = new StepInvocation("run-1", "media", "analyse", 2, SPEC.steps().get(1).action(),
        Map.of("uri", "file:///x"), Map.of("fetch", new StepResult("fetch", "node-b",
            Map.of("key", "abc", "bytes", 12345678901L, "nested", List.of(1, "two", Map.of("three", 3.5))))),
        new InferTarget("mlp", "1", List.of(new TensorSpec("input", DataType.FP32, new long[] {-1, 64}))), 1000);
    StepInvocation back = cbor.readValue(cbor.writeValueAsBytes(inv), StepInvocation.class);
    assertThat(back.action()).isEqualTo(inv.action());
    assertThat(back.target()).isEqualTo(inv.target());
    assertThat(back.results().get("fetch").number("bytes")).isEqualTo(12345678901L);
    assertThat(back.results().get("fetch").output().get("nested")).isEqualTo(List.of(1, "two", Map.of("three", 3.5)));
    assertThat(back).usingRecursiveComparison().ignoringFields("results").isEqualTo(inv);
    StepOutcome out = new StepOutcome("node-b", 1, 2, Map.of("outputs", List.of(Map.of("data", List.of(1.5, 2.5)))));
    assertThat(cbor.readValue(cbor.writeValueAsBytes(out), StepOutcome.class)).isEqualTo(out);
  }

  @Test
  void generateStepsAndTimedResultsRoundTrip() throws Exception {
    StepAction.Generate g = new StepAction.Generate("tiny-gpt", "Sum up ${input.t}:\n{{fetch.uri}}", true, 32, 0.7,
        0.9, 40, -3L, List.of("\n\n", "END"));
    PipelineSpec spec = new PipelineSpec("gen", List.of(SPEC.steps().get(0), new StepSpec("summary", g,
        Resources.NONE, StepPlacement.sameNodeAs("fetch"), 1, 1000)), OnNodeLoss.FAIL, 0, "", 60_000);
    String json = WireCodec.toJson(spec);
    assertThat(json).contains("\"kind\":\"generate\"").doesNotContain("io.kiln");
    assertThat(WireCodec.fromJson(json, PipelineSpec.class)).isEqualTo(spec);
    ObjectMapper cbor = WireCodec.cbor();
    StepInvocation inv = new StepInvocation("run-1", "gen", "summary", 1, g, Map.of("t", "x"), Map.of("fetch",
        new StepResult("fetch", "node-b", Map.of("uri", "http://u"), 100, 250)), null, 1000);
    StepInvocation back = cbor.readValue(cbor.writeValueAsBytes(inv), StepInvocation.class);
    assertThat(back.action()).isEqualTo(g);
    assertThat(back.results().get("fetch")).isEqualTo(inv.results().get("fetch"));
    assertThat(List.of(back.results().get("fetch").startedAtMs(), back.results().get("fetch").endedAtMs()))
        .containsExactly(100L, 250L);
    StepAction.Generate plain = new StepAction.Generate("m", "p", false, 1, 0, null, null, null, null);
    assertThat(cbor.readValue(cbor.writeValueAsBytes(plain), StepAction.class)).isEqualTo(plain);
  }

  @Test
  void runStatusesRoundTripAsJson() {
    RunStatus s = new RunStatus("media-1", "media", RunState.FAILED, "node-a", Map.of("uri", "file:///x"),
        List.of(new StepStatus("fetch", StepKind.FETCH, StepState.SUCCEEDED, "node-b", 1, 10, 11, 12, "",
            Map.of("key", "abc"))), 1, 5, 20, "why", "http://hook",
        List.of(new PipelineEvent("media-1", "media", 1, "run_started", "", "", 0, 5, "go")));
    RunStatus back = RunStore.decode(RunStore.encode(s));
    assertThat(back).isEqualTo(s);
    assertThat(RunStore.encode(s)).contains("\"state\":\"FAILED\"").contains("\"kind\":\"fetch\"");
  }
}
