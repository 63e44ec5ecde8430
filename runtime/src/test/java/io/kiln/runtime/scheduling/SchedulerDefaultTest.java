package io.kiln.runtime.scheduling;

import static io.kiln.runtime.scheduling.SimulatedCluster.id;
import static io.kiln.runtime.scheduling.SimulatedCluster.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.List;
import java.util.LongSummaryStatistics;
import org.junit.jupiter.api.Test;

class SchedulerDefaultTest {

  private static final Resources ONE_CPU = Resources.cpu(1);

  private static PlacementRequest oneCpu() {
    return PlacementRequest.of(ONE_CPU, SchedulingStrategy.DEFAULT);
  }

  @Test
  void packsOntoLocalNodeUntilItWouldReachHalfThenOntoTheNextNodeById() {
    SimulatedCluster cluster = SimulatedCluster.uniform(200, Resources.cpu(8)).withLocal("n150");

    // 1, 2, 3 of 8 CPUs stay below 50 %; the 4th would reach it.
    assertThat(cluster.placeAndApply(oneCpu())).isEqualTo("n150");
    assertThat(cluster.placeAndApply(oneCpu())).isEqualTo("n150");
    assertThat(cluster.placeAndApply(oneCpu())).isEqualTo("n150");
    assertThat(cluster.placeAndApply(oneCpu())).isEqualTo("n000");
    assertThat(cluster.usedUnits("n150", Resources.CPU)).isEqualTo(3 * Resources.SCALE);
  }

  @Test
  void rankingListsPackNodesLocalFirstThenById_thenTheRestByUtilisation() {
    SimulatedCluster cluster = SimulatedCluster.of("c",
        node("a", Resources.cpu(10)),
        node("b", Resources.cpu(10)),
        node("c", Resources.cpu(10)),
        node("d", Resources.cpu(10)),
        node("e", Resources.cpu(10)));
    cluster.reserve("a", Resources.cpu(7)).reserve("b", Resources.cpu(5)).reserve("e", Resources.cpu(2));

    // After +1 CPU: a 0.8, b 0.6, c 0.1, d 0.1, e 0.3.
    Placement p = cluster.place(oneCpu());

    assertThat(p).isEqualTo(new Placement.Ranked(List.of("c", "d", "e", "b", "a")));
  }

  @Test
  void onceEveryNodeIsAtTheThresholdSpreadsToTheLeastUtilised() {
    SimulatedCluster cluster = SimulatedCluster.of("a",
        node("a", Resources.cpu(10)),
        node("b", Resources.cpu(10)),
        node("c", Resources.cpu(10)));
    cluster.reserve("a", Resources.cpu(6)).reserve("b", Resources.cpu(8)).reserve("c", Resources.cpu(5));

    // Local node a is not preferred above the threshold: c (0.6 after) beats a (0.7) and b (0.9).
    assertThat(cluster.place(oneCpu())).isEqualTo(new Placement.Ranked(List.of("c", "a", "b")));
  }

  @Test
  void sequentialPlacementOnHundredsOfNodesPacksThenEvensOut() {
    int nodes = 200;
    SimulatedCluster cluster = SimulatedCluster.uniform(nodes, Resources.cpu(4)).withLocal("n100");

    assertThat(cluster.placeAndApply(oneCpu())).isEqualTo("n100");
    // Pack phase: each further node takes one (a second would reach 50 %), in id order.
    for (int i = 0; i < nodes - 1; i++) {
      String expected = id(i < 100 ? i : i + 1);
      assertThat(cluster.placeAndApply(oneCpu())).isEqualTo(expected);
    }
    // Spread phase: every node at or above the threshold; never more than one CPU apart.
    for (int i = 0; i < 2 * nodes; i++) {
      cluster.placeAndApply(oneCpu());
      assertThat(spreadOfUsedCpu(cluster)).isLessThanOrEqualTo(Resources.SCALE);
    }
    for (NodeView n : cluster.view().nodes()) {
      assertThat(cluster.usedUnits(n.nodeId(), Resources.CPU)).as(n.nodeId()).isEqualTo(3 * Resources.SCALE);
    }
  }

  @Test
  void zeroResourceRequestGoesToTheLocalNodeNotTheFirstById() {
    SimulatedCluster cluster = SimulatedCluster.uniform(300, Resources.cpu(8)).withLocal("n299");

    Placement p = cluster.place(PlacementRequest.of(Resources.NONE, SchedulingStrategy.DEFAULT));

    assertThat(p).isInstanceOf(Placement.Ranked.class);
    Placement.Ranked ranked = (Placement.Ranked) p;
    assertThat(ranked.first()).isEqualTo("n299");
    assertThat(ranked.nodeIds()).hasSize(300).doesNotHaveDuplicates();
    assertThat(ranked.nodeIds().get(1)).isEqualTo("n000");
  }

  @Test
  void zeroResourceRequestAvoidsABusyLocalNode() {
    SimulatedCluster cluster = SimulatedCluster.uniform(3, Resources.cpu(8)).withLocal("n000");
    cluster.reserve("n000", Resources.cpu(6));

    Placement p = cluster.place(PlacementRequest.of(Resources.NONE, SchedulingStrategy.DEFAULT));

    assertThat(p).isEqualTo(new Placement.Ranked(List.of("n001", "n002", "n000")));
  }

  @Test
  void skipsNodesThatCannotFitAndDeadLocalNode() {
    SimulatedCluster cluster = SimulatedCluster.uniform(4, Resources.cpu(4)).withLocal("n000");
    cluster.kill("n000").reserve("n001", Resources.cpu(4));

    Placement p = cluster.place(oneCpu());

    assertThat(p).isEqualTo(new Placement.Ranked(List.of("n002", "n003")));
  }

  @Test
  void nodeWithoutTheRequestedResourceKindIsNotACandidate() {
    SimulatedCluster cluster = SimulatedCluster.of("cpu",
        node("cpu", Resources.cpu(32)),
        node("gpu", Resources.cpu(8).withGpu(4)));

    Placement p = cluster.place(PlacementRequest.of(Resources.gpu(1), SchedulingStrategy.DEFAULT));

    assertThat(p).isEqualTo(new Placement.Ranked(List.of("gpu")));
  }

  private static long spreadOfUsedCpu(SimulatedCluster cluster) {
    LongSummaryStatistics used = cluster.view().nodes().stream()
        .mapToLong(n -> n.total().unitsOf(Resources.CPU) - n.available().unitsOf(Resources.CPU))
        .summaryStatistics();
    return used.getMax() - used.getMin();
  }
}
