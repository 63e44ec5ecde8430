package io.kiln.serve.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.serve.Plan;
import io.kiln.serve.PoolPlacement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Whether any node could ever host a worker, by total resources, whole GPUs and labels, and the words for it. */
class CapacityTest {

  private static NodeView node(String id, Resources total, Map<String, String> labels, boolean alive) {
    return new NodeView(id, "", total, Resources.NONE, labels, alive); // nothing available: busy never counts
  }

  private static PoolPlacement perNode(Resources each, Map<String, String> selector) {
    return new PoolPlacement(new PoolPlacement.PerNode(1), each, selector, 3);
  }

  @Test
  void aNodeWhoseTotalHoldsAWorkerCountsHoweverBusyOrDownItIs() {
    PoolPlacement pool = perNode(Resources.cpu(4), Map.of());
    assertThat(Capacity.noFit(pool, List.of(node("a", Resources.cpu(2), Map.of(), true),
        node("b", Resources.cpu(4), Map.of(), false)))).isNull();
    assertThat(Capacity.noFit(pool, List.of())).as("no nodes: nothing to judge by").isNull();
  }

  @Test
  void noNodeSaysWhatEachLacksAndWhatANodeWouldNeed() {
    PoolPlacement pool = perNode(Resources.cpu(64).withGpu(1), Map.of("zone", "x", "disk", "ssd"));
    Plan.NoFit noFit = Capacity.noFit(pool, List.of(
        node("a", Resources.cpu(128).withGpu(2), Map.of("zone", "x", "disk", "hdd"), true),
        node("b", Resources.cpu(2), Map.of("zone", "x", "disk", "ssd"), true)));
    assertThat(noFit.reason()).isEqualTo("a: label disk=hdd (node_selector wants disk=ssd); b: cannot host one worker:"
        + " each needs {CPU: 64, GPU: 1}, node total {CPU: 2}");
    assertThat(noFit.needs()).isEqualTo("a node with CPU \u2265 64, GPU \u2265 1 and labels disk=ssd, zone=x");
  }

  @Test
  void perGpuNeedsAWholeGpuAndLongListsAreCut() {
    PoolPlacement pool = new PoolPlacement(new PoolPlacement.PerGpu(2), Resources.gpu(0.5), Map.of(), 3);
    List<NodeView> nodes = List.of("n1", "n2", "n3", "n4", "n5").stream()
        .map(id -> node(id, Resources.cpu(8).withGpu(0.5), Map.of(), true)).toList();
    Plan.NoFit noFit = Capacity.noFit(pool, nodes);
    assertThat(noFit.reason()).isEqualTo("n1: has no whole GPU for per_gpu; n2: has no whole GPU for per_gpu;"
        + " n3: has no whole GPU for per_gpu; and 2 more nodes");
    assertThat(noFit.needs()).isEqualTo("a node with GPU \u2265 1");
    assertThat(Capacity.needs(perNode(Resources.cpu(0.25), Map.of()))).isEqualTo("a node with CPU \u2265 0.25");
  }

  @Test
  void theNeedsOfTwoPoolsAreTheSameWhenEveryNodeThatHostsOneHostsTheOther() {
    PoolPlacement a = perNode(Resources.cpu(1), Map.of("zone", "x"));
    assertThat(Capacity.sameNeeds(a, new PoolPlacement(new PoolPlacement.PerNode(4), Resources.cpu(1),
        Map.of("zone", "x"), 0, true))).isTrue();
    assertThat(Capacity.sameNeeds(a, perNode(Resources.cpu(2), Map.of("zone", "x")))).isFalse();
    assertThat(Capacity.sameNeeds(a, perNode(Resources.cpu(1), Map.of()))).isFalse();
  }

  @Test
  void theWaitingMessageSaysWhyAndForWhat() {
    Plan.DeploymentPlan nothingFits = new Plan.DeploymentPlan("m", "1", List.of(),
        List.of(new Plan.SkippedNode("solo", "cannot host one worker: each needs {CPU: 64}, node total {CPU: 2}")),
        List.of("no node selected: 1 nodes known, 1 alive, none qualifies (see skipped)"), List.of(),
        new Plan.NoFit("solo: cannot host one worker: each needs {CPU: 64}, node total {CPU: 2}",
            "a node with CPU \u2265 64"));
    assertThat(Capacity.waiting(nothingFits)).isEqualTo("no node selected: no node can host a worker (solo: cannot"
        + " host one worker: each needs {CPU: 64}, node total {CPU: 2}); waiting for a node with CPU \u2265 64 to join");

    Plan.DeploymentPlan nodeDown = new Plan.DeploymentPlan("m", "1", List.of(),
        List.of(new Plan.SkippedNode("a", "no label zone (node_selector wants zone=x)"),
            new Plan.SkippedNode("b", "not alive")), List.of("no node selected: ..."), List.of(), null);
    assertThat(Capacity.waiting(nodeDown)).isEqualTo("no node selected: a: no label zone (node_selector wants zone=x);"
        + " b: not alive; waiting for a node that can host a worker to come back or join");

    Plan.DeploymentPlan empty = new Plan.DeploymentPlan("m", "1", List.of(), List.of(),
        List.of("no node selected: the cluster view has no nodes"), List.of(), null);
    assertThat(Capacity.waiting(empty)).isEqualTo("no node selected: the cluster view has no nodes; waiting for a node"
        + " to join");
  }
}
