package io.kiln.runtime.scheduling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Property test (seeded): over many random clusters and requests, every strategy, the index answers exactly
 * what the plain scan ({@link Scheduler#place}) answers over the same nodes, ranking order and reasons
 * included; and it keeps doing so while rows change one by one.
 */
class PlacementIndexEquivalenceTest {

  private static final String[] CUSTOM = {"step_a_slot", "step_b_slot", "accel"};

  @Test
  void sameAsTheScanOverRandomClusters() {
    Random random = new Random(20240611);
    int compared = 0;
    int ranked = 0;
    for (int round = 0; round < 300; round++) {
      ClusterView view = randomView(random, 1 + random.nextInt(round % 10 == 0 ? 600 : 120));
      PlacementIndex index = PlacementIndex.of(view);
      for (int i = 0; i < 25; i++) {
        PlacementRequest request = randomRequest(random, view);
        Placement expected = Scheduler.place(request, view);
        assertThat(index.place(request)).as("round %d, %s", round, request).isEqualTo(expected);
        compared++;
        ranked += expected instanceof Placement.Ranked ? 1 : 0;
      }
    }
    assertThat(compared).isEqualTo(7_500);
    assertThat(ranked).as("enough ranked answers to mean something").isGreaterThan(3_000);
  }

  @Test
  void sameAsTheScanWhileRowsChangeOneByOne() {
    Random random = new Random(99);
    int compared = 0;
    for (int round = 0; round < 40; round++) {
      Map<String, NodeView> nodes = new LinkedHashMap<>();
      randomView(random, 20 + random.nextInt(150)).nodes().forEach(n -> nodes.put(n.nodeId(), n));
      String local = pick(random, new ArrayList<>(nodes.keySet()));
      PlacementIndex index = new PlacementIndex(local);
      nodes.values().forEach(index::put);
      for (int step = 0; step < 150; step++) {
        mutate(random, nodes, index);
        ClusterView view = new ClusterView(local, new ArrayList<>(nodes.values()));
        PlacementRequest request = randomRequest(random, view);
        Placement expected = Scheduler.place(request, view);
        assertThat(index.place(request)).as("round %d step %d, %s", round, step, request).isEqualTo(expected);
        compared++;
        if (expected instanceof Placement.Ranked r && random.nextBoolean()) {
          reserve(nodes, index, r.first(), request.resources()); // as the chosen node's ledger would
        }
      }
      assertThat(index.view().nodes()).containsExactlyInAnyOrderElementsOf(nodes.values());
    }
    assertThat(compared).isEqualTo(6_000);
  }

  @Test
  void everyNodeItsOwnShape() {
    // The index's worst case: no two nodes alike (memory in odd bytes), so nothing is shared per shape.
    Random random = new Random(5);
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      Resources total = Resources.cpu(8).withMemory(32_000_000_000L + random.nextInt(1_000_000));
      Resources used = Resources.cpu(random.nextInt(9)).withMemory(random.nextInt(20_000_000));
      nodes.add(new NodeView("w" + i, "", total, total.minus(used), Map.of(), random.nextInt(10) != 0));
    }
    ClusterView view = new ClusterView("w7", nodes);
    PlacementIndex index = PlacementIndex.of(view);
    assertThat(index.shapes()).isGreaterThan(1_500);
    for (int i = 0; i < 200; i++) {
      PlacementRequest request = randomRequest(random, view);
      assertThat(index.place(request)).as("%s", request).isEqualTo(Scheduler.place(request, view));
    }
  }

  @Test
  void emptyIndexAndDuplicateIds() {
    PlacementIndex index = new PlacementIndex("a");
    for (SchedulingStrategy s : List.of(SchedulingStrategy.DEFAULT, SchedulingStrategy.SPREAD,
        SchedulingStrategy.onNode("a"), SchedulingStrategy.nodeAffinity("a", true))) {
      PlacementRequest request = PlacementRequest.of(Resources.cpu(1), s);
      assertThat(index.place(request)).isEqualTo(Scheduler.place(request, new ClusterView("a", List.of())));
    }
    NodeView a = SimulatedCluster.node("a", Resources.cpu(1));
    assertThatThrownBy(() -> PlacementIndex.of(new ClusterView("a", List.of(a, a))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("duplicate node id a");
    index.put(a);
    assertThat(index.remove("a")).isTrue();
    assertThat(index.remove("a")).isFalse();
    assertThat(index.shapes()).isZero();
  }

  // ---- random clusters ------------------------------------------------------------------------------

  /**
   * Nodes of a few families (CPU only, GPU boxes, custom slots, memory), loads in whole and fractional
   * amounts, about a quarter dead, ids in mixed lengths (String order is not numeric order); the local node
   * is sometimes dead and sometimes not in the view at all.
   */
  static ClusterView randomView(Random random, int count) {
    List<NodeView> nodes = new ArrayList<>();
    Map<String, Boolean> used = new HashMap<>();
    int families = 1 + random.nextInt(6);
    for (int i = 0; i < count; i++) {
      String id;
      do {
        id = random.nextInt(4) == 0 ? "node-" + random.nextInt(100_000) : "n" + random.nextInt(count * 3 + 10);
      } while (used.put(id, true) != null);
      Resources total = family(random, random.nextInt(families));
      nodes.add(new NodeView(id, id + ":8000", total, total.minus(load(random, total)), Map.of(),
          random.nextInt(4) != 0));
    }
    String local = random.nextInt(10) == 0 ? "not-in-view" : nodes.get(random.nextInt(count)).nodeId();
    return new ClusterView(local, nodes);
  }

  private static Resources family(Random random, int family) {
    return switch (family) {
      case 0 -> Resources.cpu(8);
      case 1 -> Resources.cpu(4 * (1 + random.nextInt(4)));
      case 2 -> Resources.cpu(16).withGpu(1 + random.nextInt(8));
      case 3 -> Resources.cpu(8).with(CUSTOM[random.nextInt(CUSTOM.length)], 1 + random.nextInt(4));
      case 4 -> Resources.cpu(32).withGpu(4).withMemory((64L + random.nextInt(3) * 64) << 30);
      default -> Resources.cpu(2 + random.nextInt(3)).withGpu(random.nextInt(2))
          .with(CUSTOM[random.nextInt(CUSTOM.length)], random.nextInt(3));
    };
  }

  /** Some of {@code total} in use: whole and half CPUs, whole and fractional GPUs, slots, memory. */
  private static Resources load(Random random, Resources total) {
    Resources used = Resources.NONE;
    for (Map.Entry<String, Long> e : total.units().entrySet()) {
      long units = e.getValue();
      long take = switch (random.nextInt(4)) {
        case 0 -> 0;
        case 1 -> units;
        case 2 -> (random.nextLong() & Long.MAX_VALUE) % (units / Resources.SCALE + 1) * Resources.SCALE;
        default -> (random.nextLong() & Long.MAX_VALUE) % (units / 2500 + 1) * 2500;
      };
      if (take > 0) {
        used = used.plus(Resources.ofUnits(Map.of(e.getKey(), Math.min(units, take))));
      }
    }
    return used;
  }

  static PlacementRequest randomRequest(Random random, ClusterView view) {
    Resources need = switch (random.nextInt(12)) {
      case 0, 1 -> Resources.NONE;
      case 2 -> Resources.cpu(1);
      case 3 -> Resources.cpu(0.5 * (1 + random.nextInt(8)));
      case 4 -> Resources.gpu(1);
      case 5 -> Resources.gpu(0.25 * (1 + random.nextInt(4))).withCpu(1);
      case 6 -> Resources.gpu(1 + random.nextInt(4)).withCpu(random.nextInt(4));
      case 7 -> Resources.of(CUSTOM[random.nextInt(CUSTOM.length)], 1 + random.nextInt(2)).withCpu(0.5);
      case 8 -> Resources.memory((1L + random.nextInt(100)) << 30).withCpu(1);
      case 9 -> Resources.of("nobody_has_this", 1);
      case 10 -> Resources.cpu(20 + random.nextInt(200));
      default -> Resources.cpu(random.nextInt(3)).withGpu(random.nextInt(2) * 0.5);
    };
    SchedulingStrategy strategy = switch (random.nextInt(5)) {
      case 0 -> SchedulingStrategy.DEFAULT;
      case 1 -> SchedulingStrategy.SPREAD;
      case 2 -> SchedulingStrategy.nodeAffinity(someId(random, view), true);
      case 3 -> SchedulingStrategy.onNode(someId(random, view));
      default -> random.nextBoolean() ? SchedulingStrategy.DEFAULT : SchedulingStrategy.SPREAD;
    };
    long sequence = switch (random.nextInt(4)) {
      case 0 -> 0;
      case 1 -> random.nextInt(1000);
      case 2 -> random.nextLong();
      default -> -random.nextInt(50);
    };
    return new PlacementRequest(need, strategy, sequence);
  }

  private static String someId(Random random, ClusterView view) {
    if (view.nodes().isEmpty() || random.nextInt(8) == 0) {
      return "unknown-" + random.nextInt(3);
    }
    return view.nodes().get(random.nextInt(view.nodes().size())).nodeId();
  }

  private static <T> T pick(Random random, List<T> items) {
    return items.get(random.nextInt(items.size()));
  }

  /** One node-table change, applied to the reference map and the index alike. */
  private static void mutate(Random random, Map<String, NodeView> nodes, PlacementIndex index) {
    List<String> known = new ArrayList<>(nodes.keySet());
    switch (random.nextInt(nodes.isEmpty() ? 1 : 8)) {
      case 0 -> { // a node joins
        String id = "j" + random.nextInt(10_000);
        Resources total = family(random, random.nextInt(6));
        NodeView n = new NodeView(id, "", total, total.minus(load(random, total)), Map.of(), true);
        nodes.put(id, n);
        index.put(n);
      }
      case 1 -> { // a node dies, or comes back
        NodeView n = nodes.get(pick(random, known));
        NodeView flipped = new NodeView(n.nodeId(), n.address(), n.total(), n.available(), n.labels(), !n.alive());
        nodes.put(n.nodeId(), flipped);
        index.put(flipped);
      }
      case 2 -> { // a row goes
        String id = pick(random, known);
        nodes.remove(id);
        assertThat(index.remove(id)).isTrue();
      }
      case 3 -> { // the same resources again (a label or address change)
        NodeView n = nodes.get(pick(random, known));
        NodeView same = new NodeView(n.nodeId(), "elsewhere:1", n.total(), n.available(), Map.of("z", "b"),
            n.alive());
        nodes.put(n.nodeId(), same);
        index.put(same);
      }
      default -> { // a new load on a node
        NodeView n = nodes.get(pick(random, known));
        NodeView loaded = new NodeView(n.nodeId(), n.address(), n.total(), n.total().minus(load(random, n.total())),
            n.labels(), n.alive());
        nodes.put(n.nodeId(), loaded);
        index.put(loaded);
      }
    }
  }

  private static void reserve(Map<String, NodeView> nodes, PlacementIndex index, String id, Resources amount) {
    NodeView n = nodes.get(id);
    if (!amount.fitsIn(n.available())) {
      return; // a fragmented GPU, say: the ledger would refuse
    }
    NodeView after = new NodeView(id, n.address(), n.total(), n.available().minus(amount), n.labels(), n.alive());
    nodes.put(id, after);
    index.put(after);
  }
}
