package io.kiln.pipelines;

import static io.kiln.runtime.testing.Await.result;
import static io.kiln.pipelines.PipelineCluster.HEAD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.serve.DeploymentSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example of {@code deploy/examples/pipeline/} loads as documented and runs: its sample clips go
 * through the seed's four steps on three nodes with the real TorchScript MLP, each analysed on the node
 * that fetched it, called back from the head.
 */
@Tag("slow")
class PipelineExampleTest {

  /** Tests run in the module folder; the examples live beside it. */
  static final Path EXAMPLE = Path.of("..", "deploy", "examples", "pipeline");

  @TempDir
  Path tmp;

  @Test
  void theExampleLoads() {
    PipelineFile f = new PipelineLoader().load(EXAMPLE.resolve("media.yaml"), Set.of());
    assertThat(f.deployments()).extracting(DeploymentSpec::id).containsExactly("mlp@1");
    PipelineSpec media = f.pipelines().get(0);
    assertThat(media.name()).isEqualTo("media");
    assertThat(media.steps()).extracting(StepSpec::name).containsExactly("fetch", "analyse", "describe", "callback");
    assertThat(media.steps()).extracting(s -> s.placement().toString()).containsExactly("spread",
        "same_node_as: fetch", "default", "node_with_resource: callback_slot");
    assertThat(media.onNodeLoss()).isEqualTo(OnNodeLoss.RERUN);
  }

  @Test
  void theExampleRunsOnThreeNodesWithTheMlp() throws Exception {
    PipelineFile f = new PipelineLoader().load(EXAMPLE.resolve("media.yaml"), Set.of());
    DeploymentSpec mlp = f.deployments().get(0);
    Path repo = Path.of("..").toAbsolutePath().normalize();
    try (PipelineCluster c = new PipelineCluster(tmp, List.of(repo), Map.of("mlp", mlp.model()),
        HEAD, "w1", "w2")) {
      result(c.pipelines(HEAD).apply(f.pipelines()));
      List<String> ids = new java.util.ArrayList<>();
      for (String clip : List.of("clip-1", "clip-2", "clip-3")) {
        String uri = EXAMPLE.resolve("inputs").resolve(clip + ".f32").toAbsolutePath().normalize().toUri().toString();
        ids.add(result(c.pipelines("w1").startRun("media", RunRequest.of(Map.of("media_uri", uri,
            "callback_url", c.url("/hook/callback"))))));
      }
      for (String id : ids) {
        RunStatus s = c.awaitEnd(HEAD, id);
        assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
        assertThat(s.step("analyse").orElseThrow().nodeId()).isEqualTo(s.step("fetch").orElseThrow().nodeId());
        assertThat(s.step("callback").orElseThrow().nodeId()).isEqualTo(HEAD);
        assertThat(s.step("describe").orElseThrow().output().get("summary").toString())
            .startsWith("output: argmax per row [");
      }
      // clip-1 is the MLP's reference input: its output is the reference output.
      RunStatus first = c.status(ids.get(0));
      Map<?, ?> out = (Map<?, ?>) ((List<?>) first.step("analyse").orElseThrow().output().get("outputs")).get(0);
      JsonNode expected = new ObjectMapper().readTree(repo.resolve("models/mlp/expected.json").toFile())
          .path("output").path("data");
      List<?> data = (List<?>) out.get("data");
      assertThat(data).hasSize(expected.size());
      for (int i = 0; i < data.size(); i++) {
        assertThat(((Number) data.get(i)).doubleValue()).isCloseTo(expected.get(i).asDouble(), within(1e-4));
      }
      assertThat(c.callbacks).hasSize(3);
    }
  }
}
