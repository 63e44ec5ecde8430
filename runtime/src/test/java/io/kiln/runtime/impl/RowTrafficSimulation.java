package io.kiln.runtime.impl;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.Resources;
import io.kiln.runtime.WireCodec;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

/**
 * The node table's write traffic, simulated and counted: {@code nodes} node agents' ledgers under a task load
 * (Poisson arrivals of {@code CPU: 1} tasks, exponential durations) on one simulated clock, each node writing
 * its row through its own {@link RowPublisher} as the agent does. Every row written is serialised as
 * {@link NodeTable#publish} serialises it and its bytes are counted; so is every change, serialised as it
 * would have been written without the publisher (one write per reservation and per release, as before).
 * Every member listens to every row ({@link NodeTable}), so what a node receives is what all the others write.
 *
 * <p>Not a unit test (see {@code RowTrafficSimulationTest}); {@code loadtest/bench-scheduler.sh} prints its
 * table. Usage: {@code RowTrafficSimulation [seconds] [nodes...]}.
 */
public final class RowTrafficSimulation {

  /** Per node: 200 tasks a second of 40 ms on average, on 16 CPUs: half the node busy, 400 changes/s. */
  static final double TASKS_PER_SECOND = 200;
  static final double MEAN_TASK_MS = 40;

  /** Counted over the simulated run, summed over all nodes. */
  record Result(int nodes, double seconds, long changes, long tasksRefused, long writes, long bytesWritten,
                long bytesUnthrottled) {

    double changesPerNodeSecond() {
      return changes / (nodes * seconds);
    }

    double writesPerNodeSecond() {
      return writes / (nodes * seconds);
    }

    double meanRowBytes() {
      return writes == 0 ? 0 : bytesWritten / (double) writes;
    }

    /** What one node sends to the table per second. */
    double outBytesPerNodeSecond() {
      return bytesWritten / (nodes * seconds);
    }

    /** What one node's listener receives per second: every other node's writes. */
    double inBytesPerNodeSecond() {
      return bytesWritten * (nodes - 1.0) / nodes / seconds;
    }

    double unthrottledOutBytesPerNodeSecond() {
      return bytesUnthrottled / (nodes * seconds);
    }
  }

  private RowTrafficSimulation() {
  }

  public static void main(String[] args) {
    double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
    int[] sizes = args.length > 1 ? java.util.Arrays.stream(args, 1, args.length).mapToInt(Integer::parseInt).toArray()
        : new int[] {100, 1000};
    System.out.printf(Locale.ROOT, "# node-table row traffic, simulated: per node %.0f tasks/s of %.0f ms mean on 16 CPUs, "
        + "rows written at most every %d ms (RowPublisher); bytes = the JSON rows as serialised%n",
        TASKS_PER_SECOND, MEAN_TASK_MS, NodeAgent.ROW_INTERVAL_MS);
    System.out.printf(Locale.ROOT, "%-7s %7s %14s %13s %9s %14s %16s %20s%n", "nodes", "seconds", "changes/s/node",
        "writes/s/node", "row_bytes", "out_B/s/node", "in_B/s/node", "unthrottled_B/s/node");
    for (int n : sizes) {
      Result r = run(n, seconds, 42);
      System.out.printf(Locale.ROOT, "%-7d %7.1f %14.1f %13.2f %9.1f %14.0f %16.0f %20.0f%n", r.nodes(), r.seconds(),
          r.changesPerNodeSecond(), r.writesPerNodeSecond(), r.meanRowBytes(), r.outBytesPerNodeSecond(),
          r.inBytesPerNodeSecond(), r.unthrottledOutBytesPerNodeSecond());
    }
  }

  static Result run(int nodes, double seconds, long seed) {
    Simulation sim = new Simulation();
    Random random = new Random(seed);
    long[] counts = new long[5]; // changes, refused, writes, bytes written, bytes unthrottled
    long end = (long) (seconds * 1e9);
    for (int i = 0; i < nodes; i++) {
      String id = String.format("node-%05d", i);
      ResourceLedger ledger = new ResourceLedger(Resources.cpu(16));
      long[] version = {0};
      Map<String, String> labels = Map.of("zone", "z" + (i % 3));
      Map<String, String> services = Map.of("http", "8000", "grpc", "8001");
      String host = "10.0." + (i / 250) + "." + (i % 250);
      java.util.function.Supplier<NodeRecord> row = () -> new NodeRecord(id, host,
          ledger.total().units(), ledger.available().units(), labels, services, 1_700_000_000_000L, ++version[0]);
      RowPublisher publisher = new RowPublisher(NodeAgent.ROW_INTERVAL_MS, sim::now, sim::after, row, rec -> {
        counts[2]++;
        counts[3] += WireCodec.toJson(rec).getBytes(StandardCharsets.UTF_8).length;
        return CompletableFuture.completedFuture(null);
      });
      Runnable changed = () -> {
        counts[0]++;
        counts[4] += WireCodec.toJson(row.get()).getBytes(StandardCharsets.UTF_8).length;
        publisher.changed();
      };
      sim.at(0, changed); // the row at start
      sim.at(exponentialNanos(random, 1e9 / TASKS_PER_SECOND), new Runnable() {
        @Override
        public void run() {
          java.util.Optional<Allocation> held = ledger.tryReserve(Resources.cpu(1));
          if (held.isPresent()) {
            changed.run();
            sim.at(sim.now() + exponentialNanos(random, MEAN_TASK_MS * 1e6), () -> {
              ledger.release(held.get());
              changed.run();
            });
          } else {
            counts[1]++;
          }
          sim.at(sim.now() + exponentialNanos(random, 1e9 / TASKS_PER_SECOND), this);
        }
      });
    }
    sim.runUntil(end);
    return new Result(nodes, seconds, counts[0], counts[1], counts[2], counts[3], counts[4]);
  }

  private static long exponentialNanos(Random random, double meanNanos) {
    return Math.max(1, (long) (-Math.log(1 - random.nextDouble()) * meanNanos));
  }

  /** One simulated clock and its event queue. Not thread-safe. */
  private static final class Simulation {
    private record Event(long at, long seq, Runnable task) {
    }

    private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.at() != b.at()
        ? Long.compare(a.at(), b.at()) : Long.compare(a.seq(), b.seq()));
    private long now;
    private long seq;

    long now() {
      return now;
    }

    void at(long nanos, Runnable task) {
      queue.add(new Event(nanos, seq++, task));
    }

    void after(long delayMillis, Runnable task) {
      at(now + delayMillis * 1_000_000, task);
    }

    void runUntil(long end) {
      while (!queue.isEmpty() && queue.peek().at() <= end) {
        Event e = queue.poll();
        now = e.at();
        e.task().run();
      }
      now = end;
    }
  }
}
