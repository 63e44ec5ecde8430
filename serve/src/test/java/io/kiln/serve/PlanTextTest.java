package io.kiln.serve;

import static io.kiln.serve.PlannerTest.dead;
import static io.kiln.serve.PlannerTest.node;
import static io.kiln.serve.PlannerTest.spec;
import static io.kiln.serve.PlannerTest.view;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.runtime.Resources;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PlanTextTest {

  private static Plan mixedPlan() {
    DeploymentSpec mlp = spec("mlp", "    pool: {workers_per_node: 2, worker_resources: {CPU: 1}}\n");
    DeploymentSpec vision = spec("vision", "    pool: {per_gpu: 1, worker_resources: {GPU: 1}, node_selector: {zone: a}}\n"
        + "    autoscaling: {min_workers: 1, max_workers: 4}\n");
    return new Planner().plan(List.of(mlp, vision), view(
        node("node-a", Resources.cpu(8).withGpu(2), Map.of("zone", "a")),
        node("node-b", Resources.cpu(1), Map.of("zone", "b")),
        dead("node-c", Resources.cpu(8))));
  }

  @Test
  void tableShowsPlacementsSkipsAndProblems() {
    List<String> lines = mixedPlan().toText().lines().toList();
    assertThat(lines.get(0)).isEqualTo("Plan: 2 deployments on 3 nodes (2 alive)");
    assertThat(lines).containsSubsequence(
        "mlp@1: 4 workers on 2 nodes (2 per node × 2 nodes)",
        "  NODE    ADDRESS      WORKERS  FITS  PER WORKER  NEEDED    AVAILABLE         POOL MANAGER",
        "  node-a  node-a:8000  2        8     {CPU: 1}    {CPU: 2}  {CPU: 8, GPU: 2}  kiln/pool/mlp@1/node-a",
        "  node-b  node-b:8000  2        1     {CPU: 1}    {CPU: 2}  {CPU: 1}          kiln/pool/mlp@1/node-b",
        "  skipped node-c: not alive",
        "  PROBLEM: node-b can host 1 of the 2 workers asked (each needs {CPU: 1}; node total {CPU: 1})",
        "vision@1: 1 worker on 1 node (1 per node × 1 node)",
        "  node-a  node-a:8000  1 (max 2)  2     {GPU: 1}    {GPU: 1}  {CPU: 6, GPU: 2}  kiln/pool/vision@1/node-a",
        "  skipped node-b: label zone=b (node_selector wants zone=a)",
        "Nodes",
        "  NODE    ALIVE  TOTAL             AVAILABLE         PLANNED           DEPLOYMENTS",
        "  node-a  yes    {CPU: 8, GPU: 2}  {CPU: 8, GPU: 2}  {CPU: 2, GPU: 1}  mlp@1, vision@1",
        "  node-c  no     {CPU: 8}          {CPU: 8}          {}                -",
        "1 problem:",
        "  mlp@1: node-b can host 1 of the 2 workers asked (each needs {CPU: 1}; node total {CPU: 1})");
    // The node-level sum is not repeated when a deployment already overflows that node alone.
    assertThat(lines).noneMatch(l -> l.contains("together need"));
  }

  @Test
  void healthyPlanEndsWithOk() {
    DeploymentSpec mlp = spec("mlp", "    pool: {workers_per_node: 2}\n");
    String text = new Planner().plan(List.of(mlp),
        view(node("n1", Resources.cpu(4), Map.of()), node("n2", Resources.cpu(4), Map.of()))).toText();
    assertThat(text).endsWith("\nOK: 4 workers in 1 deployment\n");
    assertThat(text).doesNotContain("PROBLEM", "warning", "skipped");
  }

  @Test
  void jsonCarriesTheSameFacts() throws Exception {
    Plan plan = mixedPlan();
    JsonNode json = new ObjectMapper().readTree(plan.toJson());
    assertThat(json.get("ok").asBoolean()).isFalse();
    assertThat(json.at("/problems/0").asText()).startsWith("mlp@1: node-b can host 1 of the 2");
    assertThat(json.at("/deployments/0/placements/0/worker_names").toString())
        .isEqualTo("[\"kiln/pool/mlp@1/node-a/worker-0\",\"kiln/pool/mlp@1/node-a/worker-1\"]");
    assertThat(json.at("/deployments/1/placements/0/max_workers").asInt()).isEqualTo(2);
    assertThat(json.at("/deployments/1/skipped/0/reason").asText()).isEqualTo("label zone=b (node_selector wants zone=a)");
    assertThat(json.at("/nodes/0/planned").toString()).isEqualTo("{\"CPU\":2,\"GPU\":1}");
    assertThat(new ObjectMapper().registerModule(SpecJson.module()).writeValueAsString(plan)).isEqualTo(plan.toJson());
  }

  @Test
  void unlimitedFitIsWrittenAsAnyAndNull() throws Exception {
    Plan plan = new Planner().plan(List.of(spec("free", "    pool: {workers_per_node: 1, worker_resources: {}}\n")),
        view(node("n1", Resources.cpu(1), Map.of())));
    assertThat(plan.toText()).contains("  n1    n1:8000  1        any   {}");
    assertThat(new ObjectMapper().readTree(plan.toJson()).at("/deployments/0/placements/0/fits_total").isNull()).isTrue();
  }
}
