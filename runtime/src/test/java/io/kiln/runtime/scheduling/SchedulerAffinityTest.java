package io.kiln.runtime.scheduling;

import static io.kiln.runtime.scheduling.SimulatedCluster.deadNode;
import static io.kiln.runtime.scheduling.SimulatedCluster.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class SchedulerAffinityTest {

  private SimulatedCluster cluster;

  @BeforeEach
  void cluster() {
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      nodes.add(node(SimulatedCluster.id(i), Resources.cpu(8)));
    }
    nodes.add(node("small", Resources.cpu(8).withGpu(2)));
    nodes.add(deadNode("gone", Resources.cpu(64).withGpu(8)));
    cluster = new SimulatedCluster(new ClusterView("n000", nodes));
  }

  private static PlacementRequest hard(Resources r, String nodeId) {
    return PlacementRequest.of(r, SchedulingStrategy.onNode(nodeId));
  }

  private static PlacementRequest soft(Resources r, String nodeId) {
    return PlacementRequest.of(r, SchedulingStrategy.nodeAffinity(nodeId, true));
  }

  private Placement defaultFor(Resources r) {
    return cluster.place(PlacementRequest.of(r, SchedulingStrategy.DEFAULT));
  }

  @Test
  void hardOnDeadNodeIsInfeasible() {
    assertThat(cluster.place(hard(Resources.NONE, "gone")))
        .isEqualTo(new Placement.Infeasible("node gone is dead"));
  }

  @Test
  void hardOnUnknownNodeIsInfeasible() {
    assertThat(cluster.place(hard(Resources.cpu(1), "nowhere")))
        .isEqualTo(new Placement.Infeasible("unknown node nowhere"));
  }

  @Test
  void hardOnTooSmallNodeIsInfeasibleWithTheNumbers() {
    Placement p = cluster.place(hard(Resources.gpu(4), "small"));

    assertThat(p).isInstanceOf(Placement.Infeasible.class);
    assertThat(((Placement.Infeasible) p).reason())
        .isEqualTo("needs {GPU: 4}, node small has {CPU: 8, GPU: 2} in total");
  }

  @Test
  void hardOnBusyNodeIsPending() {
    cluster.reserve("small", Resources.gpu(1)).reserve("small", Resources.gpu(0.5));

    Placement p = cluster.place(hard(Resources.gpu(1), "small"));

    assertThat(p).isInstanceOf(Placement.Pending.class);
    assertThat(((Placement.Pending) p).reason()).contains("{GPU: 1}", "{CPU: 8, GPU: 0.5}");
  }

  @Test
  void hardOnNodeWithRoomIsThatNodeAlone() {
    cluster.reserve("n150", Resources.cpu(7));

    assertThat(cluster.place(hard(Resources.cpu(1), "n150"))).isEqualTo(new Placement.Ranked(List.of("n150")));
    assertThat(cluster.place(hard(Resources.NONE, "n150"))).isEqualTo(new Placement.Ranked(List.of("n150")));
  }

  @Test
  void softWithRoomIsThatNodeThenTheDefaultRankingOfTheOthers() {
    Placement p = cluster.place(soft(Resources.cpu(1), "n150"));

    List<String> expected = new ArrayList<>();
    expected.add("n150");
    ((Placement.Ranked) defaultFor(Resources.cpu(1))).nodeIds().stream()
        .filter(id -> !id.equals("n150")).forEach(expected::add);
    assertThat(p).isEqualTo(new Placement.Ranked(expected));
    assertThat(expected).hasSize(201).startsWith("n150", "n000", "n001");
  }

  @Test
  void softFallsBackToDefaultWhenTheNodeIsDeadUnknownOrBusy() {
    cluster.reserve("n150", Resources.cpu(8));

    assertThat(cluster.place(soft(Resources.cpu(1), "gone"))).isEqualTo(defaultFor(Resources.cpu(1)));
    assertThat(cluster.place(soft(Resources.cpu(1), "nowhere"))).isEqualTo(defaultFor(Resources.cpu(1)));
    assertThat(cluster.place(soft(Resources.cpu(1), "n150"))).isEqualTo(defaultFor(Resources.cpu(1)));
    assertThat(((Placement.Ranked) cluster.place(soft(Resources.cpu(1), "n150"))).nodeIds()).doesNotContain("n150");
  }

  @Test
  void softFallsBackToDefaultsPendingOrInfeasible() {
    cluster.reserve("small", Resources.gpu(2));

    assertThat(cluster.place(soft(Resources.gpu(1), "small"))).isInstanceOf(Placement.Pending.class)
        .isEqualTo(defaultFor(Resources.gpu(1)));
    assertThat(cluster.place(soft(Resources.gpu(4), "small"))).isInstanceOf(Placement.Infeasible.class)
        .isEqualTo(defaultFor(Resources.gpu(4)));
  }

  @Test
  void softOnTheOnlyFittingNodeIsThatNodeAlone() {
    assertThat(cluster.place(soft(Resources.gpu(1), "small"))).isEqualTo(new Placement.Ranked(List.of("small")));
  }
}
