package io.kiln.runtime.bench;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.scheduling.Placement;
import io.kiln.runtime.scheduling.PlacementIndex;
import io.kiln.runtime.scheduling.PlacementRequest;
import io.kiln.runtime.scheduling.Scheduler;
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
 * soft affinity to a node, {@code CPU: 1}. Run with {@code loadtest/bench-scheduler.sh}.
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
}
