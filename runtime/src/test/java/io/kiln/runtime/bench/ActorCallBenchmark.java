package io.kiln.runtime.bench;

import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.vertx.core.Vertx;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * Local actor call latency and throughput, side by side with a bare Vert.x event-bus request/reply on the
 * same machine in the same run. Not a test: run it with {@code loadtest/bench-runtime.sh}.
 *
 * <p>Latency: one call in flight, p50/p99 over {@code seconds}. Throughput: one caller keeping
 * {@code inflight} calls outstanding.
 */
public final class ActorCallBenchmark {

  /** The benchmark actor: a trivial method so the figure is the runtime's overhead. */
  public static final class Echo {
    public int inc(int x) {
      return x + 1;
    }

    /**
     * Asynchronous: the answer comes from a task on the actor's own context, after the method returned, as a
     * pool dispatcher's settlement does; the cell finishes the call there (no second hop).
     */
    public CompletableFuture<Integer> incLater(int x) {
      CompletableFuture<Integer> f = new CompletableFuture<>();
      Vertx.currentContext().runOnContext(v -> f.complete(x + 1));
      return f;
    }
  }

  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    if (args.length > 1 && args[1].equals("cluster")) {
      crossNode(seconds);
      return;
    }
    KilnRuntime rt = LocalCluster.singleNode(new NodeOptions("bench", "127.0.0.1", Resources.cpu(2), Map.of()))
        .toCompletableFuture().get();
    try {
      ActorHandle<Echo> worker = rt.actor(Echo::new).remote().toCompletableFuture().get();
      ActorHandle<Echo> loop = rt.actor(Echo::new).mode(ExecutionMode.EVENT_LOOP).remote().toCompletableFuture().get();
      Vertx vertx = rt.vertx();
      // The honest baseline: a consumer on its own event loop, as an actor is (same thread would skip the hop).
      vertx.deployVerticle(new io.vertx.core.VerticleBase() {
        @Override
        public io.vertx.core.Future<?> start() {
          return vertx.eventBus().<Integer>consumer("bench.bare", m -> m.reply(m.body() + 1)).completion();
        }
      }).toCompletionStage().toCompletableFuture().get();

      System.out.printf("%-34s %10s %10s %10s %12s%n", "scenario", "p50 us", "p99 us", "p99.9 us", "calls/s");
      for (int round = 0; round < 2; round++) { // the first round is warm-up
        boolean print = round == 1;
        report(print, "bare event bus, 1 in flight", latency(seconds, x -> vertx.eventBus().<Integer>request("bench.bare", x)
            .map(m -> m.body()).toCompletionStage().toCompletableFuture()));
        report(print, "actor EVENT_LOOP, 1 in flight", latency(seconds, x -> loop.call(Echo::inc, x).toCompletableFuture()));
        report(print, "actor WORKER, 1 in flight", latency(seconds, x -> worker.call(Echo::inc, x).toCompletableFuture()));
        report(print, "actor EVENT_LOOP async, 1 in flight", latency(seconds,
            x -> loop.callAsync(Echo::incLater, x).toCompletableFuture()));
        for (int inflight : new int[] {16, 64}) {
          reportTp(print, "bare event bus, " + inflight + " in flight", throughput(seconds, inflight,
              x -> vertx.eventBus().<Integer>request("bench.bare", x).map(m -> m.body()).toCompletionStage().toCompletableFuture()));
          reportTp(print, "actor EVENT_LOOP, " + inflight + " in flight", throughput(seconds, inflight,
              x -> loop.call(Echo::inc, x).toCompletableFuture()));
          reportTp(print, "actor WORKER, " + inflight + " in flight", throughput(seconds, inflight,
              x -> worker.call(Echo::inc, x).toCompletableFuture()));
          reportTp(print, "actor EVENT_LOOP async, " + inflight + " in flight", throughput(seconds, inflight,
              x -> loop.callAsync(Echo::incLater, x).toCompletableFuture()));
        }
      }
    } finally {
      rt.close();
    }
  }

  /**
   * Two clustered nodes (each its own Hazelcast member and clustered Vert.x, talking over loopback TCP) in
   * this JVM: the caller on one, the actor on the other, so every call is encoded, sent and decoded.
   */
  private static void crossNode(int seconds) throws Exception {
    String name = "bench-" + java.util.UUID.randomUUID();
    io.kiln.runtime.ClusterOptions head = new io.kiln.runtime.ClusterOptions(name, "127.0.0.1", 0,
        java.util.List.of(), java.time.Duration.ofSeconds(1), java.time.Duration.ofSeconds(5), null);
    KilnRuntime a = io.kiln.runtime.KilnCluster.join(new NodeOptions("caller", "127.0.0.1", Resources.NONE, Map.of()),
        head).toCompletableFuture().get();
    io.kiln.runtime.ClusterOptions joiner = new io.kiln.runtime.ClusterOptions(name, "127.0.0.1", 0,
        java.util.List.of("127.0.0.1:" + io.kiln.runtime.KilnCluster.clusterPort(a)), java.time.Duration.ofSeconds(1),
        java.time.Duration.ofSeconds(5), null);
    KilnRuntime b = io.kiln.runtime.KilnCluster.join(new NodeOptions("host", "127.0.0.1", Resources.cpu(2), Map.of()),
        joiner).toCompletableFuture().get();
    try {
      ActorHandle<Echo> worker = a.actor(Echo::new).strategy(io.kiln.runtime.SchedulingStrategy.onNode("host"))
          .remote().toCompletableFuture().get();
      ActorHandle<Echo> loop = a.actor(Echo::new).mode(ExecutionMode.EVENT_LOOP)
          .strategy(io.kiln.runtime.SchedulingStrategy.onNode("host")).remote().toCompletableFuture().get();
      System.out.printf("%-34s %10s %10s %10s %12s%n", "cross-node scenario", "p50 us", "p99 us", "p99.9 us", "calls/s");
      for (int round = 0; round < 2; round++) {
        boolean print = round == 1;
        report(print, "remote EVENT_LOOP, 1 in flight", latency(seconds, x -> loop.call(Echo::inc, x).toCompletableFuture()));
        report(print, "remote WORKER, 1 in flight", latency(seconds, x -> worker.call(Echo::inc, x).toCompletableFuture()));
        for (int inflight : new int[] {16, 64}) {
          report(print, "remote EVENT_LOOP, " + inflight + " in flight", throughput(seconds, inflight,
              x -> loop.call(Echo::inc, x).toCompletableFuture()));
          report(print, "remote WORKER, " + inflight + " in flight", throughput(seconds, inflight,
              x -> worker.call(Echo::inc, x).toCompletableFuture()));
        }
      }
    } finally {
      b.close();
      a.close();
    }
  }

  private interface Call {
    CompletableFuture<Integer> apply(int x);
  }

  private record Result(Histogram hist, double perSecond) {
  }

  private static Result latency(int seconds, Call call) throws Exception {
    Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    long n = 0;
    long start = System.nanoTime();
    while (System.nanoTime() < end) {
      long t0 = System.nanoTime();
      call.apply((int) n).get();
      h.recordValue(System.nanoTime() - t0);
      n++;
    }
    return new Result(h, n / ((System.nanoTime() - start) / 1e9));
  }

  private static Result throughput(int seconds, int inflight, Call call) throws Exception {
    Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
    Semaphore permits = new Semaphore(inflight);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    long n = 0;
    long start = System.nanoTime();
    while (System.nanoTime() < end) {
      permits.acquire();
      long t0 = System.nanoTime();
      call.apply((int) n).whenComplete((v, e) -> {
        synchronized (h) {
          h.recordValue(System.nanoTime() - t0);
        }
        permits.release();
      });
      n++;
    }
    permits.acquire(inflight);
    return new Result(h, n / ((System.nanoTime() - start) / 1e9));
  }

  private static void report(boolean print, String name, Result r) {
    if (print) {
      System.out.printf("%-34s %10.1f %10.1f %10.1f %12.0f%n", name, r.hist.getValueAtPercentile(50) / 1e3,
          r.hist.getValueAtPercentile(99) / 1e3, r.hist.getValueAtPercentile(99.9) / 1e3, r.perSecond);
    }
  }

  private static void reportTp(boolean print, String name, Result r) {
    report(print, name, r);
  }
}
