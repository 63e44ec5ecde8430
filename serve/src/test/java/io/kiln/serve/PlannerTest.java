package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PlannerTest {

  private final Planner planner = new Planner();

  static DeploymentSpec spec(String name, String poolAndMore) {
    return Specs.single(Specs.withPool(poolAndMore).replace("name: mlp", "name: " + name));
  }

  static NodeView node(String id, Resources total, Map<String, String> labels) {
    return new NodeView(id, id + ":8000", total, total, labels, true);
  }

  static NodeView node(String id, Resources total, Resources available) {
    return new NodeView(id, id + ":8000", total, available, Map.of(), true);
  }

  static NodeView dead(String id, Resources total) {
    return new NodeView(id, id + ":8000", total, total, Map.of(), false);
  }

  static ClusterView view(NodeView... nodes) {
    return new ClusterView(nodes.length == 0 ? "none" : nodes[0].nodeId(), List.of(nodes));
  }

  @Test
  void fixedCpuPoolOnEveryAliveNodeWithNames() {
    DeploymentSpec mlp = spec("mlp", "    pool: {workers_per_node: 2, worker_resources: {CPU: 1}}\n");
    Plan plan = planner.plan(List.of(mlp),
        view(node("n1", Resources.cpu(8), Map.of()), dead("n2", Resources.cpu(8)), node("n3", Resources.cpu(4), Map.of())));

    Plan.DeploymentPlan d = plan.deployments().get(0);
    assertThat(plan.ok()).isTrue();
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers, Plan.Placement::fitsTotal)
        .containsExactly(tuple("n1", 2, 8), tuple("n3", 2, 4));
    assertThat(d.skipped()).containsExactly(new Plan.SkippedNode("n2", "not alive"));
    assertThat(d.totalWorkers()).isEqualTo(4);
    Plan.Placement n1 = d.placements().get(0);
    assertThat(n1.poolManager()).isEqualTo("kiln/pool/mlp@1/n1");
    assertThat(n1.workerNames()).containsExactly("kiln/pool/mlp@1/n1/worker-0", "kiln/pool/mlp@1/n1/worker-1");
    assertThat(n1.needed()).isEqualTo(Map.of("CPU", 2.0));
    assertThat(n1.available()).isEqualTo(Map.of("CPU", 8.0));
    assertThat(plan.nodes()).extracting(Plan.NodeLoad::nodeId, Plan.NodeLoad::planned)
        .containsExactly(tuple("n1", Map.of("CPU", 2.0)), tuple("n2", Map.of()), tuple("n3", Map.of("CPU", 2.0)));
  }

  @Test
  void nodeSelectorMatchesAllLabels() {
    DeploymentSpec s = spec("mlp", "    pool: {workers_per_node: 1, node_selector: {zone: a, disk: ssd}}\n");
    Plan plan = planner.plan(List.of(s), view(
        node("a-ssd", Resources.cpu(2), Map.of("zone", "a", "disk", "ssd", "extra", "x")),
        node("a-hdd", Resources.cpu(2), Map.of("zone", "a", "disk", "hdd")),
        node("b-ssd", Resources.cpu(2), Map.of("zone", "b", "disk", "ssd")),
        node("bare", Resources.cpu(2), Map.of())));
    Plan.DeploymentPlan d = plan.deployments().get(0);
    assertThat(d.placements()).extracting(Plan.Placement::nodeId).containsExactly("a-ssd");
    assertThat(d.skipped()).containsExactly(
        new Plan.SkippedNode("a-hdd", "label disk=hdd (node_selector wants disk=ssd)"),
        new Plan.SkippedNode("b-ssd", "label zone=b (node_selector wants zone=a)"),
        new Plan.SkippedNode("bare", "no label disk (node_selector wants disk=ssd)"));
  }

  @Test
  void perGpuScalesWithTheNodesGpus() {
    DeploymentSpec s = spec("vision", "    pool: {per_gpu: 2, worker_resources: {GPU: 0.5}}\n");
    Plan plan = planner.plan(List.of(s), view(
        node("gpu4", Resources.gpu(4).withCpu(32), Map.of()),
        node("gpu1", Resources.gpu(1).withCpu(8), Map.of()),
        node("half", Resources.gpu(0.5).withCpu(8), Map.of()),
        node("cpu", Resources.cpu(64), Map.of())));
    Plan.DeploymentPlan d = plan.deployments().get(0);
    assertThat(plan.ok()).isTrue();
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers)
        .containsExactly(tuple("gpu1", 2), tuple("gpu4", 8));
    assertThat(d.skipped()).containsExactly(
        new Plan.SkippedNode("cpu", "cannot host one worker: each needs {GPU: 0.5}, node total {CPU: 64}"),
        new Plan.SkippedNode("half", "has no whole GPU for per_gpu"));
  }

  @Test
  void fractionalGpuSharesPackOneDeviceEach() {
    DeploymentSpec s = spec("frac", "    pool: {workers_per_node: 5, worker_resources: {GPU: 0.4}}\n");
    Plan plan = planner.plan(List.of(s), view(node("g2", Resources.gpu(2), Map.of())));
    // 0.4 + 0.4 fit one device; a third would straddle two, so 2 devices hold 4 workers, not 5.
    assertThat(plan.deployments().get(0).placements().get(0).fitsTotal()).isEqualTo(4);
    assertThat(plan.allProblems()).containsExactly(
        "frac@1: g2 can host 4 of the 5 workers asked (each needs {GPU: 0.4}; node total {GPU: 2})");
  }

  @Test
  void nodeTooSmallForTheWorkersAskedIsAProblemThatSaysHowManyFit() {
    DeploymentSpec s = spec("mlp", "    pool: {workers_per_node: 4, worker_resources: {CPU: 1}}\n");
    Plan plan = planner.plan(List.of(s), view(node("small", Resources.cpu(2), Map.of())));
    assertThat(plan.ok()).isFalse();
    assertThat(plan.deployments().get(0).problems())
        .containsExactly("small can host 2 of the 4 workers asked (each needs {CPU: 1}; node total {CPU: 2})");
  }

  @Test
  void busyNodeIsAWarningNotAProblem() {
    DeploymentSpec s = spec("mlp", "    pool: {workers_per_node: 2, worker_resources: {CPU: 1}}\n");
    Plan plan = planner.plan(List.of(s), view(node("busy", Resources.cpu(8), Resources.cpu(1))));
    assertThat(plan.ok()).isTrue();
    assertThat(plan.deployments().get(0).warnings()).containsExactly(
        "busy has room for 1 of the 2 workers now (each needs {CPU: 1}; available {CPU: 1}); "
            + "the rest wait for resources to free");
  }

  @Test
  void autoscalingStartsAtMinWorkers() {
    DeploymentSpec s = spec("auto", "    autoscaling: {min_workers: 1, max_workers: 4}\n");
    Plan plan = planner.plan(List.of(s), view(node("n1", Resources.cpu(8), Map.of()), node("n2", Resources.cpu(2), Map.of())));
    Plan.DeploymentPlan d = plan.deployments().get(0);
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers, Plan.Placement::maxWorkers)
        .containsExactly(tuple("n1", 1, 4), tuple("n2", 1, 4));
    assertThat(d.warnings()).containsExactly("n2 can host 2 workers; autoscaling up to 4 stops there");
    assertThat(plan.ok()).isTrue();
  }

  @Test
  void noNodeSelectedIsAProblem() {
    DeploymentSpec s = spec("gpu", "    pool: {workers_per_node: 1, worker_resources: {GPU: 1}}\n");
    Plan plan = planner.plan(List.of(s), view(node("cpu", Resources.cpu(8), Map.of()), dead("gone", Resources.gpu(8))));
    assertThat(plan.allProblems()).containsExactly(
        "gpu@1: no node selected: 2 nodes known, 1 alive, none qualifies (see skipped)");
    assertThat(planner.plan(List.of(s), new ClusterView("x", List.of())).allProblems())
        .containsExactly("gpu@1: no node selected: the cluster view has no nodes");
  }

  @Test
  void deploymentsAreAccountedTogether() {
    DeploymentSpec a = spec("a", "    pool: {workers_per_node: 6, worker_resources: {CPU: 1}}\n");
    DeploymentSpec b = spec("b", "    pool: {workers_per_node: 4, worker_resources: {CPU: 1}}\n");
    Plan plan = planner.plan(List.of(a, b), view(node("n1", Resources.cpu(8), Map.of())));
    Plan.Placement bOnN1 = plan.deployments().get(1).placements().get(0);
    assertThat(bOnN1.available()).isEqualTo(Map.of("CPU", 2.0));
    assertThat(bOnN1.fitsAvailable()).isEqualTo(2);
    assertThat(plan.deployments().get(1).warnings()).hasSize(1);
    assertThat(plan.problems())
        .containsExactly("n1: the deployments together need {CPU: 10}, more than the node's total {CPU: 8}");
    assertThat(plan.nodes().get(0).deployments()).containsExactly("a@1", "b@1");
    assertThat(plan.ok()).isFalse();
  }

  @Test
  void workersAskingNothingFitAnywhere() {
    DeploymentSpec s = spec("free", "    pool: {workers_per_node: 3, worker_resources: {}}\n");
    Plan plan = planner.plan(List.of(s), view(node("n1", Resources.NONE, Map.of())));
    assertThat(plan.deployments().get(0).placements()).singleElement().satisfies(p -> {
      assertThat(p.workers()).isEqualTo(3);
      assertThat(p.fitsTotal()).isEqualTo(Integer.MAX_VALUE);
    });
  }

  @Test
  void planIsAPureFunctionOfItsInputs() {
    DeploymentSpec s = spec("mlp", "    pool: {workers_per_node: 2}\n");
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      nodes.add(node(String.format("n%03d", i), Resources.cpu(i % 4), Map.of("i", Integer.toString(i))));
    }
    Plan first = planner.plan(List.of(s), new ClusterView("n000", nodes));
    Collections.reverse(nodes);
    Plan second = planner.plan(List.of(s), new ClusterView("n199", nodes));
    assertThat(second).isEqualTo(first);
    assertThat(first.deployments().get(0).placements()).hasSize(150);
    assertThat(first.deployments().get(0).problems()).hasSize(50); // the nodes with one CPU host 1 of 2
  }

  @Test
  void numWorkersSpreadsEvenlyRemainderToTheFirstNodesById() {
    DeploymentSpec s = spec("mlp", "    pool: {num_workers: 5, worker_resources: {CPU: 1}}\n");
    // Given out of order: the spread follows node ids, not the view's order.
    Plan plan = planner.plan(List.of(s), view(node("n3", Resources.cpu(8), Map.of()),
        node("n1", Resources.cpu(8), Map.of()), node("n2", Resources.cpu(8), Map.of())));
    Plan.DeploymentPlan d = plan.deployments().get(0);
    assertThat(plan.ok()).isTrue();
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers, Plan.Placement::maxWorkers)
        .containsExactly(tuple("n1", 2, 2), tuple("n2", 2, 2), tuple("n3", 1, 1));
    assertThat(d.totalWorkers()).isEqualTo(5);
    assertThat(plan.toText()).contains("mlp@1: 5 workers on 3 nodes (per node: 2 + 2 + 1)");
    // The same inputs give the same plan.
    assertThat(planner.plan(List.of(s), view(node("n1", Resources.cpu(8), Map.of()),
        node("n2", Resources.cpu(8), Map.of()), node("n3", Resources.cpu(8), Map.of())))).isEqualTo(plan);
  }

  @Test
  void numWorkersBelowTheNodeCountLeavesTheLastNodesWithoutAPool() {
    DeploymentSpec s = spec("mlp", "    pool: {num_workers: 2}\n");
    Plan.DeploymentPlan d = planner.plan(List.of(s), view(node("a", Resources.cpu(2), Map.of()),
        node("b", Resources.cpu(2), Map.of()), node("c", Resources.cpu(2), Map.of()))).deployments().get(0);
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers)
        .containsExactly(tuple("a", 1), tuple("b", 1));
    assertThat(d.skipped()).containsExactly(
        new Plan.SkippedNode("c", "num_workers 2 spread over 3 nodes leaves none for this one"));
    assertThat(d.problems()).isEmpty();
  }

  @Test
  void numWorkersFillsSmallNodesAndGivesTheRestToBigOnes() {
    DeploymentSpec s = spec("mlp", "    pool: {num_workers: 7, worker_resources: {CPU: 1}}\n");
    Plan.DeploymentPlan d = planner.plan(List.of(s), view(node("big1", Resources.cpu(8), Map.of()),
        node("big2", Resources.cpu(8), Map.of()), node("small", Resources.cpu(1), Map.of()),
        node("tiny", Resources.cpu(0.5), Map.of()), dead("dead", Resources.cpu(8)))).deployments().get(0);
    // small holds 1 of its even share of 3; its 2 go to big1 and big2; tiny cannot host one; dead is not alive.
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers)
        .containsExactly(tuple("big1", 3), tuple("big2", 3), tuple("small", 1));
    assertThat(d.skipped()).extracting(Plan.SkippedNode::nodeId).containsExactlyInAnyOrder("dead", "tiny");
    assertThat(d.problems()).isEmpty();
  }

  @Test
  void numWorkersBeyondWhatTheNodesHoldIsAProblem() {
    DeploymentSpec s = spec("mlp", "    pool: {num_workers: 6, worker_resources: {CPU: 1}}\n");
    Plan.DeploymentPlan d = planner.plan(List.of(s), view(node("a", Resources.cpu(2), Map.of()),
        node("b", Resources.cpu(1), Map.of()))).deployments().get(0);
    assertThat(d.placements()).extracting(Plan.Placement::nodeId, Plan.Placement::workers)
        .containsExactly(tuple("a", 2), tuple("b", 1));
    assertThat(d.problems()).containsExactly(
        "num_workers 6: the 2 selected nodes can host 3 workers together (each needs {CPU: 1})");
  }

  @Test
  void numWorkersMovesWhenANodeJoinsOrLeaves() {
    DeploymentSpec s = spec("mlp", "    pool: {num_workers: 4}\n");
    NodeView a = node("a", Resources.cpu(8), Map.of());
    NodeView b = node("b", Resources.cpu(8), Map.of());
    NodeView c = node("c", Resources.cpu(8), Map.of());
    assertThat(planner.plan(List.of(s), view(a, b)).deployments().get(0).placements())
        .extracting(Plan.Placement::workers).containsExactly(2, 2);
    assertThat(planner.plan(List.of(s), view(a, b, c)).deployments().get(0).placements())
        .extracting(Plan.Placement::workers).containsExactly(2, 1, 1);
    assertThat(planner.plan(List.of(s), view(a, dead("b", Resources.cpu(8)), c)).deployments().get(0).placements())
        .extracting(Plan.Placement::nodeId, Plan.Placement::workers).containsExactly(tuple("a", 2), tuple("c", 2));
  }
}
