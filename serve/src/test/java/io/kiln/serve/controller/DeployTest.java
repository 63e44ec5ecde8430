package io.kiln.serve.controller;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolNames;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.Resources;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import io.kiln.serve.Plan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Deploying: the dry run, a deployment becoming READY and serving, node selection, the real MLP. */
@Tag("slow")
class DeployTest {

  private static final String TWO_WORKERS = """
      pool:
        workers_per_node: 2
        worker_resources: {CPU: 1}
      """;

  @Test
  void dryRunReturnsThePlanAndChangesNothing() {
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      ApplyResult dry = nodes.dryRun(ServeNodes.identity("dry", "1", TWO_WORKERS));

      assertThat(dry.applied()).isFalse();
      Plan.DeploymentPlan plan = dry.plan().deployments().get(0);
      assertThat(plan.placements()).extracting(Plan.Placement::nodeId).containsExactly("node-a", "node-b");
      assertThat(plan.placements()).allSatisfy(p -> {
        assertThat(p.workers()).isEqualTo(2);
        assertThat(p.poolManager()).isEqualTo(PoolNames.poolManager("dry", "1", p.nodeId()));
      });
      assertThat(dry.plan().ok()).isTrue();

      // Another deployment becoming READY proves the controller ran passes since the dry run.
      nodes.apply(ServeNodes.identity("real", "1", TWO_WORKERS));
      nodes.awaitReady("real", "1");
      for (ServeNodes.Node n : nodes.nodes()) {
        assertThat(n.serve().desired()).containsOnlyKeys("real");
        assertThat(n.serve().statuses()).containsOnlyKeys("real");
      }
      assertThat(nodes.poolActors("dry")).isEmpty();
      assertThat(result(nodes.leader().runtime().store("kiln.deployments", JsonNode.class).entries()))
          .containsOnlyKeys("real");
    }
  }

  @Test
  void deployBecomesReadyAndServes() {
    try (ServeNodes nodes = new ServeNodes("node-a")) {
      ApplyResult applied = nodes.apply(ServeNodes.identity("echo", "1", TWO_WORKERS));
      assertThat(applied.applied()).isTrue();

      DeploymentStatus s = nodes.awaitReady("echo", "1");
      assertThat(s.message()).contains("serving");
      assertThat(s.pools()).singleElement().satisfies(p -> {
        assertThat(p.node()).isEqualTo("node-a");
        assertThat(p.version()).isEqualTo("1");
        assertThat(p.ready()).isTrue();
        assertThat(p.targetWorkers()).isEqualTo(2);
      });

      for (int i = 0; i < 20; i++) {
        InferenceResponse r = nodes.infer("echo", ServeNodes.row(i));
        assertThat(r.modelVersion()).isEqualTo("1");
        assertThat(ServeNodes.echoes(r, i)).isTrue();
      }
      assertThat(nodes.poolActors("echo")).extracting(ActorInfo::name).containsExactlyInAnyOrder(
          PoolNames.poolManager("echo", "1", "node-a"),
          PoolNames.worker("echo", "1", "node-a", 0),
          PoolNames.worker("echo", "1", "node-a", 1));
      assertThat(nodes.poolStatus("echo", "1", "node-a").workers()).hasSize(2);
    }
  }

  @Test
  void aPoolOnEverySelectedNodeOnly() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", ServeNodes.NODE, Map.of("zone", "x"));
      nodes.start("node-b", ServeNodes.NODE, Map.of("zone", "y"));
      nodes.start("node-c", ServeNodes.NODE, Map.of("zone", "x"));
      ApplyResult applied = nodes.apply(ServeNodes.identity("zoned", "1", """
          pool:
            workers_per_node: 1
            node_selector: {zone: x}
          """));
      assertThat(applied.plan().deployments().get(0).skipped()).singleElement()
          .satisfies(skip -> assertThat(skip.nodeId()).isEqualTo("node-b"));

      DeploymentStatus s = nodes.awaitReady("zoned", "1");
      assertThat(s.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("node-a", "node-c");
      assertThat(nodes.managers("zoned")).extracting(ActorInfo::nodeId).containsExactlyInAnyOrder("node-a", "node-c");
      for (String node : List.of("node-a", "node-c")) {
        InferenceResponse r = result(nodes.sendTo("zoned", "1", node, ServeNodes.row(7)), ServeNodes.WAIT);
        assertThat(r.parameters()).containsEntry("kiln_node", node);
        assertThat(ServeNodes.echoes(r, 7)).isTrue();
      }
    }
  }

  /** Worker counts and node selectors apply to running pools in place: the same pool, rescaled. */
  @Test
  void reapplyingAVersionRescalesAndReselectsItsPoolsLive() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", ServeNodes.NODE, Map.of("zone", "x"));
      nodes.start("node-b", ServeNodes.NODE, Map.of("zone", "y"));
      nodes.apply(ServeNodes.identity("live", "1", """
          pool:
            workers_per_node: 1
          """));
      nodes.awaitReady("live", "1");
      String managerOnB = nodes.managers("live").stream().filter(a -> a.nodeId().equals("node-b")).findFirst()
          .orElseThrow().actorId();

      ApplyResult again = nodes.apply(ServeNodes.identity("live", "1", """
          pool:
            workers_per_node: 3
            node_selector: {zone: y}
          """));
      assertThat(again.applied()).isTrue();

      await().atMost(ServeNodes.WAIT).until(() -> nodes.managers("live").size() == 1
          && nodes.status("live").orElseThrow().pools().size() == 1
          && nodes.status("live").orElseThrow().pools().get(0).workers() == 3);
      DeploymentStatus s = nodes.awaitReady("live", "1");
      assertThat(s.pools()).singleElement().satisfies(p -> {
        assertThat(p.node()).isEqualTo("node-b");
        assertThat(p.targetWorkers()).isEqualTo(3);
      });
      // The same pool, scaled: not a new one.
      assertThat(nodes.managers("live")).singleElement().satisfies(m -> assertThat(m.actorId()).isEqualTo(managerOnB));
      assertThat(nodes.poolActors("live")).hasSize(4);
    }
  }

  /**
   * What a pool was created with (here batching) cannot change under the same version: refused at the version's line
   * and column, nothing changes and the running pool serves on; the identical file re-applies; a new version rolls
   * the change out.
   */
  @Test
  void reapplyingAVersionWithSettingsItsPoolsKeepIsRefusedAtItsVersion() {
    String eight = "pool: {workers_per_node: 1}\nbatching: {max_batch_size: 8}\n";
    String four = "pool: {workers_per_node: 1}\nbatching: {max_batch_size: 4}\n";
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      nodes.apply(ServeNodes.identity("fixed", "1", eight));
      nodes.awaitReady("fixed", "1");
      List<String> managers = nodes.managers("fixed").stream().map(ActorInfo::actorId).sorted().toList();

      for (boolean dryRun : new boolean[] {true, false}) {
        Throwable t = failure(nodes.follower().serve().apply(ServeNodes.identity("fixed", "1", four),
            ServeNodes.SOURCE, dryRun));
        assertThat(t).isInstanceOf(DeploymentValidationException.class);
        assertThat(((DeploymentValidationException) t).problems()).extracting(Problem::toString).containsExactly(
            "test.yaml:3:14: deployments[0].version: spec changed but version \"1\" is the same: batching differs"
                + " from the running deployment, whose pools keep what they were created with; bump version to roll"
                + " the change out (pool.workers_per_node / per_gpu / num_workers, pool.node_selector and autoscaling"
                + " change in place)");
      }
      // Specs built in code are refused too, at "specs" (they have no lines).
      DeploymentSpec inCode = new DeploymentLoader(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false))
          .load(ServeNodes.identity("fixed", "1", four), ServeNodes.SOURCE).deployments().get(0);
      Throwable t = failure(nodes.follower().serve().apply(List.of(inCode), false));
      assertThat(((DeploymentValidationException) t).problems()).singleElement()
          .satisfies(p -> assertThat(p.toString()).startsWith("specs:1:1: deployments[0].version: spec changed"));

      for (ServeNodes.Node n : nodes.nodes()) {
        assertThat(n.serve().deployed("fixed").orElseThrow().batching().maxBatchSize()).isEqualTo(8);
      }
      assertThat(ServeNodes.echoes(nodes.infer("fixed", ServeNodes.row(7)), 7)).isTrue();
      assertThat(nodes.apply(ServeNodes.identity("fixed", "1", eight)).applied()).isTrue(); // identical: fine
      assertThat(nodes.managers("fixed").stream().map(ActorInfo::actorId).sorted().toList()).isEqualTo(managers);

      nodes.apply(ServeNodes.identity("fixed", "2", four));
      nodes.awaitReady("fixed", "2");
      assertThat(nodes.leader().serve().deployed("fixed").orElseThrow().batching().maxBatchSize()).isEqualTo(4);
      await().atMost(ServeNodes.WAIT).until(() -> nodes.managers("fixed").stream()
          .allMatch(m -> m.name().startsWith(PoolNames.prefix("fixed", "2"))));
    }
  }

  @Test
  void theQuickstartMlpServesTheExpectedNumbers() throws Exception {
    Path quickstart = ProjectModels.modelsDir().getParent().resolve("deploy/examples/quickstart.yaml");
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", Resources.cpu(2), Map.of());
      ApplyResult applied = nodes.follower().serve().apply(Files.readString(quickstart), quickstart, false)
          .toCompletableFuture().get();
      assertThat(applied.deployments()).singleElement().satisfies(d ->
          assertThat(d.model().uri().toString()).isEqualTo(ProjectModels.modelsDir().resolve("mlp").toString()));

      nodes.awaitReady("mlp", "1");
      Tensor input = ProjectModels.expectedInput("mlp");
      float[] expected = ProjectModels.expectedOutput("mlp").asFloats();
      InferenceResponse r = nodes.infer("mlp", InferenceRequest.of(input));
      float[] got = ServeNodes.floats(r);
      assertThat(r.outputs().get(0).shape()).containsExactly(2, 10);
      for (int i = 0; i < expected.length; i++) {
        assertThat(got[i]).as("output[%d]", i).isCloseTo(expected[i], within(1e-5f));
      }
      assertThat(nodes.status("mlp").orElseThrow().phase()).isEqualTo(Phase.READY);
    }
  }
}
