package io.kiln.runtime.bench;

import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.HdrHistogram.Histogram;

/**
 * The named-actor registry ({@code kiln.actors}, a Hazelcast IMap) holding {@code actors} named actors on a
 * three-member in-process Hazelcast cluster (three Kiln nodes, each its own member and clustered Vert.x,
 * over loopback TCP): the rate of creating them (from all three nodes, round robin), of looking them up by
 * name ({@code getActor}) from random nodes, of get-or-create of names that exist, and of listing them all
 * ({@code namedActors}: what the serve controller reads on every reconcile, and every pool manager when it
 * starts), with the entries' serialised size. {@code inflight} operations outstanding (one for listing).
 * Not a test: {@code REGISTRY=1 loadtest/bench-scheduler.sh} runs it.
 *
 * <p>Usage: {@code RegistryScaleBenchmark [actors] [seconds] [inflight]}.
 */
public final class RegistryScaleBenchmark {

  /** A named actor with nothing to do. */
  public static final class Named {
    public int ping() {
      return 1;
    }
  }

  public static void main(String[] args) throws Exception {
    int actors = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    int inflight = args.length > 2 ? Integer.parseInt(args[2]) : 64;
    List<KilnRuntime> nodes = startCluster(3);
    try {
      Random random = new Random(1);
      System.out.printf("# named-actor registry: %d named actors, 3 Hazelcast members in one JVM (loopback TCP), "
          + "%d operations in flight%n", actors, inflight);
      System.out.printf("%-40s %9s %10s %10s %10s%n", "registry operation", "count", "per_s", "p50_us", "p99_us");
      report("create named actors (round robin)", run(actors, inflight,
          i -> create(nodes.get(i % 3), name(i), false)));
      for (int round = 0; round < 2; round++) { // the first round is warm-up
        boolean print = round == 1;
        Result lookups = runFor(seconds, inflight, i -> nodes.get(random.nextInt(3))
            .getActor("bench", name(random.nextInt(actors)), Named.class));
        Result existing = runFor(seconds, inflight, i -> create(nodes.get(random.nextInt(3)),
            name(random.nextInt(actors)), true));
        if (print) {
          report("lookup by name (getActor)", lookups);
          report("get-or-create, name exists", existing);
        }
      }
      // What a reconcile reads: every entry, from every partition.
      Result listing = runFor(seconds, 1, i -> nodes.get(1).namedActors().thenAccept(all -> {
        if (all.size() != actors) {
          throw new IllegalStateException("listed " + all.size() + " named actors, not " + actors);
        }
      }));
      report("list all named actors (namedActors)", listing);
      Map<String, String> raw = ((io.kiln.runtime.impl.RuntimeImpl) nodes.get(0)).backend().map("kiln.actors")
          .entries().toCompletableFuture().get();
      long bytes = raw.entrySet().stream()
          .mapToLong(e -> e.getKey().length() + e.getValue().getBytes(java.nio.charset.StandardCharsets.UTF_8).length)
          .sum();
      System.out.printf("# registry entries: %d, %.0f bytes each on average (key + JSON value), %.1f MB in all%n",
          raw.size(), bytes / (double) raw.size(), bytes / 1e6);
      long mismatched = 0;
      for (int i = 0; i < 100; i++) {
        int k = random.nextInt(actors);
        String viaLookup = nodes.get(0).getActor("bench", name(k), Named.class).toCompletableFuture().get().actorId();
        String viaCreate = create(nodes.get(2), name(k), true).toCompletableFuture().get().actorId();
        mismatched += viaLookup.equals(viaCreate) ? 0 : 1;
      }
      System.out.printf("# check: get-or-create and lookup name the same actor for 100 random names: %s%n",
          mismatched == 0 ? "yes" : mismatched + " differ");
    } finally {
      for (int i = nodes.size() - 1; i >= 0; i--) {
        nodes.get(i).close();
      }
    }
  }

  private static String name(int i) {
    return String.format("named-%05d", i);
  }

  private static CompletionStage<ActorHandle<Named>> create(KilnRuntime node, String name, boolean getIfExists) {
    var creation = node.actor(Named::new).name(name).namespace("bench").detached().mode(ExecutionMode.EVENT_LOOP);
    return (getIfExists ? creation.getIfExists() : creation).remote();
  }

  static List<KilnRuntime> startCluster(int size) throws Exception {
    String cluster = "registry-bench-" + UUID.randomUUID();
    List<KilnRuntime> nodes = new ArrayList<>();
    ClusterOptions head = new ClusterOptions(cluster, "127.0.0.1", 0, List.of(), Duration.ofSeconds(1),
        Duration.ofSeconds(10), null);
    nodes.add(KilnCluster.join(new NodeOptions("r0", "127.0.0.1", Resources.cpu(2), Map.of()), head)
        .toCompletableFuture().get(60, TimeUnit.SECONDS));
    ClusterOptions joiner = new ClusterOptions(cluster, "127.0.0.1", 0,
        List.of("127.0.0.1:" + KilnCluster.clusterPort(nodes.get(0))), Duration.ofSeconds(1), Duration.ofSeconds(10),
        null);
    for (int i = 1; i < size; i++) {
      nodes.add(KilnCluster.join(new NodeOptions("r" + i, "127.0.0.1", Resources.cpu(2), Map.of()), joiner)
          .toCompletableFuture().get(60, TimeUnit.SECONDS));
    }
    return nodes;
  }

  private record Result(long count, double perSecond, Histogram latency, long errors) {
  }

  /** {@code count} operations, {@code inflight} at a time. */
  private static Result run(int count, int inflight, IntFunction<CompletionStage<?>> op) throws Exception {
    return measure(count, Long.MAX_VALUE, inflight, op);
  }

  /** As many operations as fit in {@code seconds}, {@code inflight} at a time. */
  private static Result runFor(int seconds, int inflight, IntFunction<CompletionStage<?>> op) throws Exception {
    return measure(Integer.MAX_VALUE, System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds), inflight, op);
  }

  private static Result measure(int count, long deadline, int inflight, IntFunction<CompletionStage<?>> op)
      throws Exception {
    Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    AtomicLong errors = new AtomicLong();
    Semaphore permits = new Semaphore(inflight);
    long start = System.nanoTime();
    int n = 0;
    while (n < count && System.nanoTime() < deadline) {
      permits.acquire();
      long t0 = System.nanoTime();
      op.apply(n).whenComplete((v, e) -> {
        synchronized (h) {
          h.recordValue(Math.min(System.nanoTime() - t0, h.getHighestTrackableValue()));
        }
        if (e != null && errors.incrementAndGet() == 1) {
          System.err.println("first error: " + e);
        }
        permits.release();
      });
      n++;
    }
    permits.acquire(inflight);
    return new Result(n, n / ((System.nanoTime() - start) / 1e9), h, errors.get());
  }

  private static void report(String name, Result r) {
    System.out.printf("%-40s %9d %10.0f %10.0f %10.0f%s%n", name, r.count(), r.perSecond(),
        r.latency().getValueAtPercentile(50) / 1e3, r.latency().getValueAtPercentile(99) / 1e3,
        r.errors() == 0 ? "" : "  (" + r.errors() + " errors)");
  }
}
