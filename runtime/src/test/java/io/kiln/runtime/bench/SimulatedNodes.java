package io.kiln.runtime.bench;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Simulated node tables for the scheduler benchmarks, seeded so that every run places over the same nodes.
 *
 * <ul>
 *   <li>{@code mixed}: four node families bought in bulk (60 % {@code CPU: 16}, 20 % {@code CPU: 32, GPU: 4},
 *       10 % {@code CPU: 8, step_a_slot: 2}, 10 % {@code CPU: 64, GPU: 8, memory: 256 GiB}), each loaded with
 *       whole CPUs, quarter GPUs, whole slots and 8 GiB blocks of memory, as actors reserve them; 2 % dead.
 *   <li>{@code distinct}: {@code CPU: 16} plus a memory total that differs per node by some bytes, so that no
 *       two nodes have the same (total, available): the index's worst case.
 * </ul>
 */
public final class SimulatedNodes {

  private SimulatedNodes() {
  }

  public static ClusterView cluster(String kind, int count, long seed) {
    Random random = new Random(seed);
    List<NodeView> nodes = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      Resources total = total(kind, random);
      nodes.add(new NodeView(id(i), id(i) + ":8000", total, total.minus(load(random, total)), Map.of(),
          random.nextInt(50) != 0));
    }
    return new ClusterView(id(count / 2), nodes);
  }

  /** Zero-padded, so that id order is numeric order. */
  public static String id(int i) {
    return String.format("node-%05d", i);
  }

  static Resources total(String kind, Random random) {
    if (kind.equals("distinct")) {
      return Resources.cpu(16).withMemory((64L << 30) + random.nextInt(1 << 20));
    }
    if (!kind.equals("mixed")) {
      throw new IllegalArgumentException("cluster kind is mixed or distinct, got " + kind);
    }
    int f = random.nextInt(10);
    if (f < 6) {
      return Resources.cpu(16);
    } else if (f < 8) {
      return Resources.cpu(32).withGpu(4);
    } else if (f < 9) {
      return Resources.cpu(8).with("step_a_slot", 2);
    }
    return Resources.cpu(64).withGpu(8).withMemory(256L << 30);
  }

  /** A random load within {@code total}: whole CPUs, quarter GPUs, whole slots, 8 GiB blocks of memory. */
  public static Resources load(Random random, Resources total) {
    Resources used = Resources.NONE;
    for (Map.Entry<String, Long> e : total.units().entrySet()) {
      long step = switch (e.getKey()) {
        case Resources.GPU -> Resources.SCALE / 4;
        case Resources.MEMORY -> (8L << 30) * Resources.SCALE;
        default -> Resources.SCALE;
      };
      long steps = e.getValue() / step;
      long take = step * (long) random.nextInt((int) Math.min(Integer.MAX_VALUE, steps + 1));
      if (take > 0) {
        used = used.plus(Resources.ofUnits(Map.of(e.getKey(), take)));
      }
    }
    return used;
  }
}
