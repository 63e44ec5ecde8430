package io.kiln.runtime.scheduling;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.PlacementGroupState;
import io.kiln.runtime.PlacementGroupStrategy;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link BundleScheduler}: each strategy on simulated clusters of hundreds of nodes, pending and infeasible cases. */
class BundleSchedulerTest {

  private static List<Resources> bundles(int n, Resources each) {
    return Collections.nCopies(n, each);
  }

  private static List<String> assigned(BundlePlacement p) {
    assertThat(p).isInstanceOf(BundlePlacement.Assigned.class);
    return ((BundlePlacement.Assigned) p).nodeIds();
  }

  /** Places the group and reserves each bundle on its node, as the nodes' ledgers would. */
  private static List<String> placeAndApply(SimulatedCluster sim, BundleRequest req) {
    List<String> nodes = assigned(BundleScheduler.place(req, sim.view()));
    for (int i = 0; i < nodes.size(); i++) {
      if (req.kept().get(i) == null) {
        sim.reserve(nodes.get(i), req.bundles().get(i));
      }
    }
    return nodes;
  }

  @Test
  void strictPackPutsEveryBundleOnOneNodeGroupAfterGroup() {
    SimulatedCluster sim = SimulatedCluster.uniform(300, Resources.cpu(8));
    Map<String, Integer> groupsPerNode = new HashMap<>();
    for (int g = 0; g < 600; g++) {
      List<String> nodes = placeAndApply(sim, BundleRequest.of(bundles(2, Resources.cpu(2)), PlacementGroupStrategy.STRICT_PACK));
      assertThat(new HashSet<>(nodes)).hasSize(1);
      groupsPerNode.merge(nodes.get(0), 1, Integer::sum);
    }
    // 600 groups of 4 CPUs fill 300 nodes of 8 exactly: the next one must wait, not split.
    assertThat(groupsPerNode.values()).containsOnly(2);
    BundlePlacement next = BundleScheduler.place(BundleRequest.of(bundles(2, Resources.cpu(1)),
        PlacementGroupStrategy.STRICT_PACK), sim.view());
    assertThat(next).isInstanceOf(BundlePlacement.Pending.class);
  }

  @Test
  void strictPackLargerThanEveryNodeIsInfeasibleWithTheNumbers() {
    SimulatedCluster sim = SimulatedCluster.uniform(200, Resources.cpu(8));
    BundlePlacement p = BundleScheduler.place(BundleRequest.of(bundles(3, Resources.cpu(4)),
        PlacementGroupStrategy.STRICT_PACK), sim.view());
    assertThat(p).isInstanceOf(BundlePlacement.Infeasible.class);
    assertThat(((BundlePlacement.Infeasible) p).reason()).contains("STRICT_PACK needs {CPU: 12}")
        .contains("has {CPU: 8}");
  }

  @Test
  void packUsesOneNodeWhenItFitsAndFewNodesWhenNot() {
    SimulatedCluster sim = SimulatedCluster.uniform(250, Resources.cpu(4));
    List<String> small = placeAndApply(sim, BundleRequest.of(bundles(4, Resources.cpu(1)), PlacementGroupStrategy.PACK));
    assertThat(new HashSet<>(small)).hasSize(1);
    // Ten bundles of 2 CPUs need at least five 4-CPU nodes; PACK uses exactly that many.
    List<String> big = placeAndApply(sim, BundleRequest.of(bundles(10, Resources.cpu(2)), PlacementGroupStrategy.PACK));
    assertThat(new HashSet<>(big)).hasSize(5).doesNotContain(small.get(0));
  }

  @Test
  void strictSpreadPutsEachBundleOnADistinctNode() {
    SimulatedCluster sim = SimulatedCluster.uniform(500, Resources.cpu(4).withGpu(1));
    List<String> nodes = placeAndApply(sim, BundleRequest.of(bundles(200, Resources.gpu(1)), PlacementGroupStrategy.STRICT_SPREAD));
    assertThat(new HashSet<>(nodes)).hasSize(200);
    List<String> more = placeAndApply(sim, BundleRequest.of(bundles(300, Resources.gpu(1)), PlacementGroupStrategy.STRICT_SPREAD));
    assertThat(new HashSet<>(more)).hasSize(300).doesNotContainAnyElementsOf(nodes);
    assertThat(BundleScheduler.place(BundleRequest.of(bundles(2, Resources.gpu(1)), PlacementGroupStrategy.STRICT_SPREAD),
        sim.view())).isInstanceOf(BundlePlacement.Pending.class);
  }

  @Test
  void strictSpreadWithMoreBundlesThanNodesIsInfeasible() {
    SimulatedCluster sim = SimulatedCluster.uniform(3, Resources.cpu(8));
    BundlePlacement p = BundleScheduler.place(BundleRequest.of(bundles(4, Resources.cpu(1)),
        PlacementGroupStrategy.STRICT_SPREAD), sim.view());
    assertThat(p).isInstanceOf(BundlePlacement.Infeasible.class);
    assertThat(((BundlePlacement.Infeasible) p).reason()).contains("STRICT_SPREAD needs 4 distinct nodes")
        .contains("only 3 of 3 alive nodes");
  }

  @Test
  void strictSpreadFindsTheMatchingAGreedyPassWouldMiss() {
    // Both nodes idle and equal for bundle 0, which a greedy pass would give n000 (id order); only n000 has
    // the slot bundle 1 needs. The matching moves bundle 0 to n001.
    SimulatedCluster sim = SimulatedCluster.of("n000",
        SimulatedCluster.node("n000", Resources.cpu(1).with("slot", 1)),
        SimulatedCluster.node("n001", Resources.cpu(1)));
    List<String> nodes = assigned(BundleScheduler.place(BundleRequest.of(
        List.of(Resources.cpu(1), Resources.cpu(1).with("slot", 1)), PlacementGroupStrategy.STRICT_SPREAD), sim.view()));
    assertThat(nodes).containsExactly("n001", "n000");
  }

  @Test
  void spreadUsesDistinctNodesAndSharesOnlyWhenThereAreTooFew() {
    SimulatedCluster big = SimulatedCluster.uniform(400, Resources.cpu(4));
    assertThat(new HashSet<>(placeAndApply(big, BundleRequest.of(bundles(100, Resources.cpu(1)),
        PlacementGroupStrategy.SPREAD)))).hasSize(100);
    SimulatedCluster three = SimulatedCluster.uniform(3, Resources.cpu(4));
    List<String> nodes = placeAndApply(three, BundleRequest.of(bundles(7, Resources.cpu(1)), PlacementGroupStrategy.SPREAD));
    Map<String, Integer> perNode = new HashMap<>();
    nodes.forEach(n -> perNode.merge(n, 1, Integer::sum));
    assertThat(perNode).hasSize(3);
    assertThat(perNode.values()).allMatch(c -> c >= 2 && c <= 3);
  }

  @Test
  void aBundleNoNodeCanHoldIsInfeasibleNamingTheBundle() {
    SimulatedCluster sim = SimulatedCluster.uniform(100, Resources.cpu(4));
    for (PlacementGroupStrategy s : PlacementGroupStrategy.values()) {
      BundlePlacement p = BundleScheduler.place(BundleRequest.of(List.of(Resources.cpu(1), Resources.gpu(1)), s),
          sim.view());
      assertThat(p).isInstanceOf(BundlePlacement.Infeasible.class);
      assertThat(((BundlePlacement.Infeasible) p).reason()).startsWith("bundle 1 {GPU: 1} fits no alive node");
    }
  }

  @Test
  void aGroupThatFitsOnlyWhenIdleIsPendingAndNothingIsPartlyAssigned() {
    SimulatedCluster sim = SimulatedCluster.uniform(200, Resources.cpu(4));
    for (int i = 0; i < 199; i++) {
      sim.reserve(SimulatedCluster.id(i), Resources.cpu(3));
    }
    sim.reserve(SimulatedCluster.id(199), Resources.cpu(1));
    // One node has 3 CPUs free, the others 1: two 2-CPU bundles fit neither one node nor two: all wait.
    for (PlacementGroupStrategy s : List.of(PlacementGroupStrategy.STRICT_SPREAD, PlacementGroupStrategy.STRICT_PACK)) {
      BundlePlacement p = BundleScheduler.place(BundleRequest.of(bundles(2, Resources.cpu(2)), s), sim.view());
      assertThat(p).as(s.name()).isInstanceOf(BundlePlacement.Pending.class);
    }
  }

  @Test
  void deadNodesAreNeverChosen() {
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      Resources total = Resources.cpu(4);
      nodes.add(i % 3 == 0 ? SimulatedCluster.node(SimulatedCluster.id(i), total)
          : SimulatedCluster.deadNode(SimulatedCluster.id(i), total));
    }
    ClusterView view = new ClusterView("n000", nodes);
    List<String> placed = assigned(BundleScheduler.place(BundleRequest.of(bundles(100, Resources.cpu(1)),
        PlacementGroupStrategy.STRICT_SPREAD), view));
    assertThat(placed).allMatch(id -> Integer.parseInt(id.substring(1)) % 3 == 0);
    assertThat(BundleScheduler.place(BundleRequest.of(bundles(101, Resources.cpu(1)), PlacementGroupStrategy.STRICT_SPREAD),
        view)).isInstanceOf(BundlePlacement.Infeasible.class);
  }

  @Test
  void reschedulingKeepsSurvivingBundlesAndStrictSpreadAvoidsTheirNodes() {
    SimulatedCluster sim = SimulatedCluster.uniform(300, Resources.cpu(2));
    List<String> first = placeAndApply(sim, BundleRequest.of(bundles(3, Resources.cpu(1)), PlacementGroupStrategy.STRICT_SPREAD));
    sim.kill(first.get(1));
    List<String> kept = new ArrayList<>(first);
    kept.set(1, null);
    List<String> again = placeAndApply(sim, new BundleRequest(bundles(3, Resources.cpu(1)),
        PlacementGroupStrategy.STRICT_SPREAD, kept));
    assertThat(again.get(0)).isEqualTo(first.get(0));
    assertThat(again.get(2)).isEqualTo(first.get(2));
    assertThat(again.get(1)).isNotIn(first.get(0), first.get(1), first.get(2));
    // PACK puts a lost bundle back beside the kept ones when they have room.
    SimulatedCluster small = SimulatedCluster.uniform(50, Resources.cpu(4));
    List<String> packed = placeAndApply(small, BundleRequest.of(bundles(2, Resources.cpu(1)), PlacementGroupStrategy.PACK));
    List<String> replaced = assigned(BundleScheduler.place(new BundleRequest(bundles(2, Resources.cpu(1)),
        PlacementGroupStrategy.PACK, Arrays.asList(packed.get(0), null)), small.view()));
    assertThat(replaced).containsExactly(packed.get(0), packed.get(0));
  }

  @Test
  void theSameInputsGiveTheSamePlacement() {
    SimulatedCluster sim = SimulatedCluster.uniform(400, Resources.cpu(4));
    for (int i = 0; i < 400; i += 7) {
      sim.reserve(SimulatedCluster.id(i), Resources.cpu(i % 4));
    }
    for (PlacementGroupStrategy s : PlacementGroupStrategy.values()) {
      BundleRequest req = BundleRequest.of(bundles(30, Resources.cpu(1)), s);
      assertThat(BundleScheduler.place(req, sim.view())).isEqualTo(BundleScheduler.place(req, sim.view()));
    }
  }

  @Test
  void placementIntoABundle() {
    List<Resources> b = List.of(Resources.cpu(2), Resources.cpu(1).withGpu(1));
    List<String> nodes = Arrays.asList("n1", null);
    assertThat(BundleScheduler.placeInBundle(Resources.cpu(1), 0, "g", PlacementGroupState.CREATED, b, nodes))
        .isEqualTo(new Placement.Ranked(List.of("n1")));
    Placement tooBig = BundleScheduler.placeInBundle(Resources.cpu(3), 0, "g", PlacementGroupState.CREATED, b, nodes);
    assertThat(((Placement.Infeasible) tooBig).reason()).isEqualTo("needs {CPU: 3}, bundle 0 of placement group g "
        + "reserves {CPU: 2}");
    assertThat(BundleScheduler.placeInBundle(Resources.gpu(1), 1, "g", PlacementGroupState.RESCHEDULING, b, nodes))
        .isInstanceOf(Placement.Pending.class);
    assertThat(BundleScheduler.placeInBundle(Resources.gpu(1), -1, "g", PlacementGroupState.RESCHEDULING, b, nodes))
        .isInstanceOf(Placement.Pending.class);
    assertThat(BundleScheduler.placeInBundle(Resources.cpu(1), -1, "g", PlacementGroupState.RESCHEDULING, b, nodes))
        .isEqualTo(new Placement.Ranked(List.of("n1")));
    assertThat(BundleScheduler.placeInBundle(Resources.cpu(1), 2, "g", PlacementGroupState.CREATED, b, nodes))
        .isInstanceOf(Placement.Infeasible.class);
    assertThat(BundleScheduler.placeInBundle(Resources.cpu(1), 0, "g", PlacementGroupState.REMOVED, b, nodes))
        .isInstanceOf(Placement.Infeasible.class);
  }
}
