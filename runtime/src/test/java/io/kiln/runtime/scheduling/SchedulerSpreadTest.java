package io.kiln.runtime.scheduling;

import static io.kiln.runtime.scheduling.SimulatedCluster.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SchedulerSpreadTest {

  private static PlacementRequest spread(Resources r, long sequence) {
    return new PlacementRequest(r, SchedulingStrategy.SPREAD, sequence);
  }

  @Test
  void threeHundredZeroResourceActorsLandOnePerNode() {
    SimulatedCluster cluster = SimulatedCluster.uniform(300, Resources.cpu(8).withGpu(1));

    Set<String> chosen = new HashSet<>();
    for (int seq = 0; seq < 300; seq++) {
      chosen.add(cluster.placeAndApply(spread(Resources.NONE, seq)));
    }

    assertThat(chosen).hasSize(300);
  }

  @Test
  void successiveSequencesRoundRobinInNodeIdOrder() {
    SimulatedCluster cluster = SimulatedCluster.of("b",
        node("c", Resources.cpu(1)), node("a", Resources.cpu(1)), node("b", Resources.cpu(1)));

    List<String> firsts = new ArrayList<>();
    for (int seq = 0; seq < 6; seq++) {
      firsts.add(((Placement.Ranked) cluster.place(spread(Resources.NONE, seq))).first());
    }

    assertThat(firsts).containsExactly("a", "b", "c", "a", "b", "c");
    assertThat(cluster.place(spread(Resources.NONE, 1)))
        .isEqualTo(new Placement.Ranked(List.of("b", "c", "a")));
    assertThat(cluster.place(spread(Resources.NONE, -1)))
        .isEqualTo(new Placement.Ranked(List.of("c", "a", "b")));
  }

  @Test
  void cpuActorsEvenUtilisationOnUniformNodes() {
    SimulatedCluster cluster = SimulatedCluster.uniform(100, Resources.cpu(4));

    for (int seq = 0; seq < 300; seq++) {
      cluster.placeAndApply(spread(Resources.cpu(1), seq));
      double[] u = cluster.view().nodes().stream().mapToDouble(NodeView::utilisation).toArray();
      double max = java.util.Arrays.stream(u).max().orElseThrow();
      double min = java.util.Arrays.stream(u).min().orElseThrow();
      assertThat(max - min).as("after placement %d", seq).isLessThanOrEqualTo(0.25);
    }
    assertThat(cluster.view().nodes()).allSatisfy(n -> assertThat(n.utilisation()).isEqualTo(0.75));
  }

  @Test
  void cpuActorsEvenUtilisationOnMixedNodeSizes() {
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      nodes.add(node(SimulatedCluster.id(i), Resources.cpu(i % 2 == 0 ? 8 : 4)));
    }
    SimulatedCluster cluster = new SimulatedCluster(new io.kiln.runtime.ClusterView("n000", nodes));

    // Capacity is 600 CPUs; placing 300 leaves every node exactly half used.
    for (int seq = 0; seq < 300; seq++) {
      cluster.placeAndApply(spread(Resources.cpu(1), seq));
    }

    assertThat(cluster.view().nodes()).allSatisfy(n -> assertThat(n.utilisation()).as(n.nodeId()).isEqualTo(0.5));
  }

  @Test
  void leastUtilisedFirstAndFullNodesLeftOut() {
    SimulatedCluster cluster = SimulatedCluster.of("a",
        node("a", Resources.cpu(10)), node("b", Resources.cpu(10)),
        node("c", Resources.cpu(10)), node("d", Resources.cpu(10)));
    cluster.reserve("a", Resources.cpu(5)).reserve("b", Resources.cpu(2)).reserve("d", Resources.cpu(10));

    assertThat(cluster.place(spread(Resources.cpu(1), 0)))
        .isEqualTo(new Placement.Ranked(List.of("c", "b", "a")));
  }

  @Test
  void pendingWhenEveryNodeIsFull() {
    SimulatedCluster cluster = SimulatedCluster.uniform(50, Resources.cpu(2));
    for (int seq = 0; seq < 100; seq++) {
      cluster.placeAndApply(spread(Resources.cpu(1), seq));
    }

    assertThat(cluster.place(spread(Resources.cpu(1), 100))).isInstanceOf(Placement.Pending.class);
    // A zero-resource actor still fits anywhere.
    assertThat(cluster.place(spread(Resources.NONE, 100))).isInstanceOf(Placement.Ranked.class);
  }
}
