package io.kiln.runtime.scheduling;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Randomised views (seeded): the same input always gives the same answer, and dead nodes never appear. */
class SchedulerDeterminismTest {

  private static final List<Resources> REQUESTS = List.of(
      Resources.NONE, Resources.cpu(1), Resources.cpu(0.5), Resources.cpu(6), Resources.gpu(1),
      Resources.gpu(0.25), Resources.gpu(2).withCpu(2), Resources.of("step_a_slot", 1), Resources.cpu(100));

  @Test
  void sameInputSameOutputWhateverTheNodeOrder() {
    Random random = new Random(42);
    for (int round = 0; round < 20; round++) {
      ClusterView view = randomView(random, 300);
      List<NodeView> shuffled = new ArrayList<>(view.nodes());
      Collections.shuffle(shuffled, random);
      ClusterView reordered = new ClusterView(view.localNodeId(), shuffled);
      for (PlacementRequest request : requests(view, random)) {
        Placement once = Scheduler.place(request, view);
        assertThat(Scheduler.place(request, view)).isEqualTo(once);
        assertThat(Scheduler.place(request, reordered)).as("%s", request).isEqualTo(once);
      }
    }
  }

  @Test
  void deadNodesAreNeverChosen() {
    Random random = new Random(7);
    int ranked = 0;
    for (int round = 0; round < 20; round++) {
      ClusterView view = randomView(random, 300);
      Set<String> dead = view.nodes().stream().filter(n -> !n.alive()).map(NodeView::nodeId)
          .collect(Collectors.toSet());
      assertThat(dead).isNotEmpty();
      for (PlacementRequest request : requests(view, random)) {
        if (Scheduler.place(request, view) instanceof Placement.Ranked r) {
          ranked++;
          assertThat(r.nodeIds()).as("%s", request).doesNotContainAnyElementsOf(dead).doesNotHaveDuplicates();
        }
      }
    }
    assertThat(ranked).isGreaterThan(100);
  }

  private static List<PlacementRequest> requests(ClusterView view, Random random) {
    List<PlacementRequest> out = new ArrayList<>();
    for (Resources r : REQUESTS) {
      out.add(PlacementRequest.of(r, SchedulingStrategy.DEFAULT));
      out.add(new PlacementRequest(r, SchedulingStrategy.SPREAD, random.nextInt(1000)));
      String some = view.nodes().get(random.nextInt(view.nodes().size())).nodeId();
      out.add(PlacementRequest.of(r, SchedulingStrategy.nodeAffinity(some, true)));
      out.add(PlacementRequest.of(r, SchedulingStrategy.onNode(some)));
    }
    return out;
  }

  /** Nodes of mixed shapes and loads; about a third dead (including, sometimes, the local node). */
  private static ClusterView randomView(Random random, int count) {
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      Resources total = Resources.cpu(4 * (1 + random.nextInt(4)));
      if (random.nextInt(3) == 0) {
        total = total.withGpu(1 + random.nextInt(4));
      }
      if (random.nextInt(5) == 0) {
        total = total.with("step_a_slot", 1 + random.nextInt(3));
      }
      Resources used = Resources.cpu(random.nextInt((int) total.get(Resources.CPU) + 1));
      if (total.get(Resources.GPU) > 0 && random.nextBoolean()) {
        used = used.withGpu(0.5);
      }
      nodes.add(new NodeView(SimulatedCluster.id(i), "", total, total.minus(used), Map.of(), random.nextInt(3) != 0));
    }
    return new ClusterView(SimulatedCluster.id(random.nextInt(count)), nodes);
  }
}
