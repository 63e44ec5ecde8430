package io.kiln.runtime.bench;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.scheduling.Placement;
import io.kiln.runtime.scheduling.PlacementIndex;
import io.kiln.runtime.scheduling.PlacementRequest;
import io.kiln.runtime.scheduling.Scheduler;
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
 * One placement over a simulated node table: the plain scan ({@link Scheduler#place} over a
 * {@link ClusterView}) against the {@link PlacementIndex} holding the same nodes. Both return the whole
 * ranking. Requests: {@code cpu} DEFAULT {@code CPU: 1}; {@code gpu} DEFAULT {@code GPU: 1} (a third of the
 * nodes have GPUs); {@code spread} SPREAD with no resources and a rising sequence (pool managers); {@code soft}
 * soft affinity to a node, {@code CPU: 1}.
 *
 * <p>The index keeps each shape's score per request while the shape lives, so it is measured three ways:
 * {@code index} the same request over an unchanged table (every score remembered); {@code indexChurn} one
 * node's row changes before each placement, as when the last placement reserved there (the production
 * pattern: one re-scored shape); {@code indexCold} the request's CPU amount cycles through 16 values so that
 * no score is remembered (every shape scored, the index's cost without its memo). Run with
 * {@code loadtest/bench-scheduler.sh}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class SchedulerBenchmark {

  @Param({"1000", "10000"})
  public int nodes;

  @Param({"mixed", "distinct"})
  public String cluster;

  @Param({"cpu", "gpu", "spread", "soft"})
  public String request;

  private ClusterView view;
  private PlacementIndex index;
  private Resources need;
  private SchedulingStrategy strategy;
  private long sequence;
  private Resources[] coldNeeds;
  private NodeView[] asLoaded;
  private NodeView[] reloaded;
  private boolean[] changed;
  private int next;

  @Setup(Level.Trial)
  public void setUp() {
    view = SimulatedNodes.cluster(cluster, nodes, 42);
    index = PlacementIndex.of(view);
    switch (request) {
      case "cpu" -> {
        need = Resources.cpu(1);
        strategy = SchedulingStrategy.DEFAULT;
      }
      case "gpu" -> {
        need = Resources.gpu(1);
        strategy = SchedulingStrategy.DEFAULT;
      }
      case "spread" -> {
        need = Resources.NONE;
        strategy = SchedulingStrategy.SPREAD;
      }
      case "soft" -> {
        need = Resources.cpu(1);
        strategy = SchedulingStrategy.nodeAffinity(SimulatedNodes.id(nodes / 3), true);
      }
      default -> throw new IllegalArgumentException("request is cpu, gpu, spread or soft, got " + request);
    }
    coldNeeds = new Resources[16];
    for (int k = 0; k < coldNeeds.length; k++) {
      coldNeeds[k] = need.withCpu(need.get(Resources.CPU) + k * 0.0001);
    }
    asLoaded = view.nodes().toArray(NodeView[]::new);
    reloaded = new NodeView[asLoaded.length];
    changed = new boolean[asLoaded.length];
    Random random = new Random(7);
    for (int i = 0; i < asLoaded.length; i++) {
      NodeView n = asLoaded[i];
      reloaded[i] = new NodeView(n.nodeId(), n.address(), n.total(),
          n.total().minus(SimulatedNodes.load(random, n.total())), n.labels(), n.alive());
    }
    PlacementRequest probe = new PlacementRequest(need, strategy, 0);
    if (!index.place(probe).equals(Scheduler.place(probe, view))) {
      throw new AssertionError("the index and the scan disagree on " + probe);
    }
  }

  @Benchmark
  public Placement scan() {
    return Scheduler.place(new PlacementRequest(need, strategy, sequence++), view);
  }

  @Benchmark
  public Placement index() {
    return index.place(new PlacementRequest(need, strategy, sequence++));
  }

  @Benchmark
  public Placement indexChurn() {
    int i = next;
    next = i + 1 == asLoaded.length ? 0 : i + 1;
    index.put(changed[i] ? asLoaded[i] : reloaded[i]);
    changed[i] = !changed[i];
    return index.place(new PlacementRequest(need, strategy, sequence++));
  }

  @Benchmark
  public Placement indexCold() {
    long s = sequence++;
    return index.place(new PlacementRequest(coldNeeds[(int) (s & 15)], strategy, s));
  }
}
