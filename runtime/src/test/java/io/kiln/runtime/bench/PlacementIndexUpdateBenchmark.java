package io.kiln.runtime.bench;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.scheduling.PlacementIndex;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * What keeping the {@link PlacementIndex} current costs per node-table change. {@code availability}: a row
 * whose available resources changed (an actor or task started or ended there; the common change), cycling
 * over all nodes, each between its table load and another one. {@code deathAndReturn}: a node goes dead or
 * comes back (the id array shifts). Run with {@code loadtest/bench-scheduler.sh}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PlacementIndexUpdateBenchmark {

  @Param({"1000", "10000"})
  public int nodes;

  @Param({"mixed", "distinct"})
  public String cluster;

  private PlacementIndex index;
  private NodeView[] asLoaded;
  private NodeView[] reloaded;
  private NodeView[] dead;
  private boolean[] changed;
  private int next;

  @Setup(Level.Trial)
  public void setUp() {
    ClusterView view = SimulatedNodes.cluster(cluster, nodes, 42);
    index = PlacementIndex.of(view);
    List<NodeView> all = view.nodes();
    Random random = new Random(7);
    asLoaded = all.toArray(NodeView[]::new);
    reloaded = new NodeView[asLoaded.length];
    dead = new NodeView[asLoaded.length];
    changed = new boolean[asLoaded.length];
    for (int i = 0; i < asLoaded.length; i++) {
      NodeView n = asLoaded[i];
      reloaded[i] = new NodeView(n.nodeId(), n.address(), n.total(),
          n.total().minus(SimulatedNodes.load(random, n.total())), n.labels(), n.alive());
      dead[i] = new NodeView(n.nodeId(), n.address(), n.total(), n.available(), n.labels(), !n.alive());
    }
  }

  @Benchmark
  public int availability() {
    int i = next;
    next = i + 1 == asLoaded.length ? 0 : i + 1;
    index.put(changed[i] ? asLoaded[i] : reloaded[i]);
    changed[i] = !changed[i];
    return i;
  }

  @Benchmark
  public int deathAndReturn() {
    int i = next;
    next = i + 1 == asLoaded.length ? 0 : i + 1;
    index.put(changed[i] ? asLoaded[i] : dead[i]);
    changed[i] = !changed[i];
    return i;
  }
}
