package io.kiln.runtime.scheduling;

import static io.kiln.runtime.scheduling.SimulatedCluster.deadNode;
import static io.kiln.runtime.scheduling.SimulatedCluster.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class SchedulerFeasibilityTest {

  private static final Resources STEP_A = Resources.cpu(1).with("step_a_slot", 1);

  @Test
  void customResourceOnlyOnSomeNodes() {
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      Resources total = i % 10 == 3 ? Resources.cpu(8).with("step_a_slot", 2) : Resources.cpu(8);
      nodes.add(node(SimulatedCluster.id(i), total));
    }
    SimulatedCluster cluster = new SimulatedCluster(new ClusterView("n000", nodes));
    Set<String> slotNodes = nodes.stream().filter(n -> n.total().unitsOf("step_a_slot") > 0)
        .map(NodeView::nodeId).collect(Collectors.toSet());

    Placement first = cluster.place(PlacementRequest.of(STEP_A, SchedulingStrategy.DEFAULT));
    assertThat(((Placement.Ranked) first).nodeIds()).hasSize(20).allMatch(slotNodes::contains);

    for (int seq = 0; seq < 40; seq++) {
      SchedulingStrategy s = seq % 2 == 0 ? SchedulingStrategy.DEFAULT : SchedulingStrategy.SPREAD;
      assertThat(cluster.placeAndApply(new PlacementRequest(STEP_A, s, seq))).isIn(slotNodes);
    }
    for (String id : slotNodes) {
      assertThat(cluster.node(id).available().unitsOf("step_a_slot")).as(id).isZero();
    }
    Placement p = cluster.place(PlacementRequest.of(STEP_A, SchedulingStrategy.DEFAULT));
    assertThat(p).isInstanceOf(Placement.Pending.class);
    assertThat(((Placement.Pending) p).reason()).contains("{CPU: 1, step_a_slot: 1}", "20 of 200");
  }

  @Test
  void infeasibleMessageStatesTheNumbersOfTheLargestAliveNode() {
    SimulatedCluster cluster = SimulatedCluster.of("n1",
        node("n1", Resources.cpu(16)),
        node("n2", Resources.cpu(8).withGpu(2)),
        node("n3", Resources.cpu(8).withGpu(1)),
        deadNode("n4", Resources.cpu(64).withGpu(8)));

    for (SchedulingStrategy s : List.of(SchedulingStrategy.DEFAULT, SchedulingStrategy.SPREAD,
        SchedulingStrategy.nodeAffinity("n4", true))) {
      assertThat(cluster.place(PlacementRequest.of(Resources.gpu(4), s)))
          .as(s.toString())
          .isEqualTo(new Placement.Infeasible("needs {GPU: 4}, largest alive node n2 has {CPU: 8, GPU: 2}"));
    }
  }

  @Test
  void infeasibleWhenNoNodeHasTheCustomResource() {
    SimulatedCluster cluster = SimulatedCluster.uniform(300, Resources.cpu(8));

    Placement p = cluster.place(PlacementRequest.of(STEP_A, SchedulingStrategy.DEFAULT));

    assertThat(p).isEqualTo(new Placement.Infeasible(
        "needs {CPU: 1, step_a_slot: 1}, largest alive node n000 has {CPU: 8}"));
  }

  @Test
  void pendingWhenSomeAliveTotalFitsButNothingIsAvailable() {
    SimulatedCluster cluster = SimulatedCluster.of("a",
        node("a", Resources.cpu(4)), node("b", Resources.cpu(4).withGpu(1)));
    cluster.reserve("b", Resources.gpu(1));

    assertThat(cluster.place(PlacementRequest.of(Resources.gpu(1), SchedulingStrategy.DEFAULT)))
        .isInstanceOf(Placement.Pending.class);
    assertThat(cluster.place(PlacementRequest.of(Resources.gpu(1), SchedulingStrategy.SPREAD)))
        .isInstanceOf(Placement.Pending.class);
  }

  @Test
  void noAliveNodesIsInfeasible() {
    SimulatedCluster cluster = SimulatedCluster.of("a", deadNode("a", Resources.cpu(4)));

    assertThat(cluster.place(PlacementRequest.of(Resources.NONE, SchedulingStrategy.DEFAULT)))
        .isInstanceOf(Placement.Infeasible.class);
    assertThat(cluster.place(PlacementRequest.of(Resources.NONE, SchedulingStrategy.SPREAD)))
        .isInstanceOf(Placement.Infeasible.class);
    assertThat(Scheduler.place(PlacementRequest.of(Resources.cpu(1), SchedulingStrategy.DEFAULT),
        new ClusterView("a", List.of())))
        .isEqualTo(new Placement.Infeasible("needs {CPU: 1}, no alive nodes"));
  }

  @Test
  void viewGpuSumMayHideFragmentation_schedulerStillRanksTheNode() {
    // Two half-used devices read as GPU: 1 available; only the node's ledger can refuse (spill-back).
    SimulatedCluster cluster = SimulatedCluster.of("a", node("a", Resources.gpu(2)));
    cluster.reserve("a", Resources.gpu(0.5)).reserve("a", Resources.gpu(0.5));

    assertThat(cluster.place(PlacementRequest.of(Resources.gpu(1), SchedulingStrategy.DEFAULT)))
        .isEqualTo(new Placement.Ranked(List.of("a")));
  }

  @Test
  void requestsAndPlacementsRejectBadValues() {
    assertThatThrownBy(() -> new PlacementRequest(null, SchedulingStrategy.DEFAULT, 0))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new PlacementRequest(Resources.NONE, null, 0))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new Placement.Ranked(List.of())).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Placement.Pending(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new Placement.Infeasible(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Scheduler.place(null, new ClusterView("a", List.of())))
        .isInstanceOf(NullPointerException.class);
  }
}
