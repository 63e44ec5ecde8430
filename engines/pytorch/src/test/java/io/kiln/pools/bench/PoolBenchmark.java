package io.kiln.pools.bench;

import static org.awaitility.Awaitility.await;

import io.kiln.engines.pytorch.tools.BuildModels;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.pools.WorkerState;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * ResNet-18 through a pool with batching against the best direct batched throughput on this machine, in one
 * run, measured A/B/A/B so that drift from other load cancels ({@link AbSlices}): every round alternates short
 * slices of direct {@link ModelRunner#infer} calls on one thread at each batch size (the compute limit) and of a
 * pool on a one-node runtime reached through {@link PoolClient} with {@code max_batch_size} = that batch size
 * under closed-loop load of {@code --ab-concurrency} one-image clients, then the pool with batching off
 * ({@code max_batch_size 1}); the round's ratio is its best pool slice over its best direct slice. Prints each
 * round's table, its {@code A/B round} line and the median/mean/spread of the ratios. {@code --rounds N} first
 * runs N survey rounds of every pool at every {@code --concurrency} (the older table). Not a test: run it with
 * {@code loadtest/bench-pools.sh}.
 *
 * <p>Usage: {@code PoolBenchmark [--image-size S] [--slice N] [--ab-rounds N] [--ab-concurrency C] [--lead N]
 * [--warmup N] [--workers N] [--threads N] [--delay-ms N] [--batches 8,16] [--rounds N] [--seconds N]
 * [--concurrency 1,8,32] [--model DIR]} (defaults: 64, 3 s per slice, 6 A/B rounds, 32 clients, 0.5 s lead-in
 * per slice, 2 s warm-up per scenario before the rounds, 1 worker, 2 intra-op threads, 2 ms, 8,16, 0 survey
 * rounds of 5 s per scenario at 1,8,32, {@code models/resnet18-<S>}, built there first if missing). The direct
 * calls run on a thread of their own, like a worker's, with the worker's intra-op threads.
 */
public final class PoolBenchmark {

  private record Result(String scenario, int concurrency, long requests, long errors, double seconds,
                        Histogram latency, double meanBatch) {
    double perSecond() {
      return requests / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    int imageSize = 64;
    double seconds = 5;
    double warmup = 2;
    int workers = 1;
    int threads = 2;
    int delayMs = 2;
    int rounds = 0;
    int abRounds = 6;
    int abConcurrency = 32;
    double slice = 3;
    double lead = 0.5;
    List<Integer> concurrency = List.of(1, 8, 32);
    List<Integer> batchSizes = List.of(8, 16);
    Path dir = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--image-size" -> imageSize = Integer.parseInt(args[++i]);
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--warmup" -> warmup = Double.parseDouble(args[++i]);
        case "--workers" -> workers = Integer.parseInt(args[++i]);
        case "--threads" -> threads = Integer.parseInt(args[++i]);
        case "--delay-ms" -> delayMs = Integer.parseInt(args[++i]);
        case "--concurrency" -> concurrency = ints(args[++i]);
        case "--batches" -> batchSizes = ints(args[++i]);
        case "--model" -> dir = Path.of(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        case "--ab-rounds" -> abRounds = Integer.parseInt(args[++i]);
        case "--ab-concurrency" -> abConcurrency = Integer.parseInt(args[++i]);
        case "--slice" -> slice = Double.parseDouble(args[++i]);
        case "--lead" -> lead = Double.parseDouble(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument '" + args[i] + "'; see the class comment");
      }
    }
    dir = dir != null ? dir : Path.of("models", "resnet18-" + imageSize);
    long t0 = System.nanoTime();
    boolean built = BuildModels.buildResNet18(dir, imageSize, 1000, false);
    if (abRounds < 1 || abConcurrency < 1 || slice <= 0 || lead < 0) {
      throw new IllegalArgumentException("--ab-rounds and --ab-concurrency must be >= 1, --slice > 0, --lead >= 0");
    }
    System.out.printf(Locale.ROOT, "# ResNet-18, 3x%dx%d, 1000 classes, %s (%s in %.1f s); %d worker(s), %d intra-op "
            + "thread(s), max_batch_delay %d ms, %d cores; %.1f s warm-up per scenario, then %d survey round(s) of "
            + "%.0f s per scenario and %d A/B round(s) of %.1f s slices (after %.1f s lead-in each) at concurrency %d, "
            + "batch sizes %s%n", imageSize, imageSize, dir, built ? "built" : "present", (System.nanoTime() - t0) / 1e9,
        workers, threads, delayMs, Runtime.getRuntime().availableProcessors(), warmup, rounds, seconds, abRounds, slice,
        lead, abConcurrency, batchSizes);

    List<Integer> warmBatches = new ArrayList<>(List.of(1));
    warmBatches.addAll(batchSizes);
    ModelSpec model = BuildModels.resnet18Spec(dir, imageSize, 1000).toBuilder().intraOpThreads(threads)
        .interOpThreads(1).warmupBatchSizes(warmBatches).build();
    InferenceRequest[] images = images(model, 16);

    ExecutorService directThread = Executors.newSingleThreadExecutor(r -> new Thread(r, "bench-direct"));
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    KilnRuntime rt = LocalCluster.singleNode(new NodeOptions("bench", "127.0.0.1", Resources.cpu(64), Map.of()))
        .toCompletableFuture().get();
    rt.registerLocalService(MeterRegistry.class, registry);
    // The direct runner is loaded on the thread that calls it, as a worker's is.
    ModelRunner runner = directThread.submit(() -> ModelRunners.load(model, List.of())).get();
    try {
      PoolClient client = new PoolClient(rt);
      List<Integer> poolBatches = new ArrayList<>(List.of(1));
      poolBatches.addAll(batchSizes);
      Map<Integer, ActorHandle<PoolManager>> pools = new java.util.LinkedHashMap<>();
      for (int b : poolBatches) {
        PoolConfig config = PoolConfig.builder().maxBatchSize(b).maxBatchDelay(Duration.ofMillis(b == 1 ? 0 : delayMs))
            .maxQueued(1024).build();
        pools.put(b, PoolManager.getOrCreate(rt, new PoolSpec("resnet-b" + b, "1", rt.nodeId(), model, config, workers,
            Resources.cpu(1), 0)).toCompletableFuture().get());
      }
      int readyWorkers = workers;
      for (ActorHandle<PoolManager> m : pools.values()) {
        await().atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(50)).until(() ->
            m.call(PoolManager::status).toCompletableFuture().get().count(WorkerState.READY) == readyWorkers);
      }
      IntFunction<IntFunction<CompletableFuture<?>>> sender = b -> i -> client.infer(RequestContext.within("", 60_000),
          "resnet-b" + b, "1", rt.nodeId(), images[i % images.length]);
      // Warm every scenario once (JIT, the pools' first batches) before anything is measured.
      for (int b : warmBatches) {
        double w = warmup;
        directThread.submit(() -> direct(runner, images, b, w)).get();
      }
      for (int b : poolBatches) {
        closedLoop("pool, max_batch_size " + b, abConcurrency, warmup, sender.apply(b), registry, "resnet-b" + b);
      }
      // Survey rounds repeat every scenario so that a change in the (shared) machine's load shows as a
      // difference between rounds rather than between scenarios.
      for (int round = 1; round <= rounds; round++) {
        List<Result> results = new ArrayList<>();
        for (int b : warmBatches) {
          double sec = seconds;
          results.add(directThread.submit(() -> direct(runner, images, b, sec)).get());
        }
        for (int b : poolBatches) {
          for (int c : concurrency) {
            String scenario = "pool, max_batch_size " + b;
            closedLoop(scenario, c, lead, sender.apply(b), registry, "resnet-b" + b);
            results.add(closedLoop(scenario, c, seconds, sender.apply(b), registry, "resnet-b" + b));
          }
        }
        print("survey round " + round, results);
      }
      double sliceSeconds = slice;
      double leadSeconds = lead;
      int c = abConcurrency;
      List<AbSlices.Round> ab = AbSlices.run(abRounds, batchSizes, true, s -> {
        try {
          if (s.kind() == AbSlices.Kind.DIRECT) {
            directThread.submit(() -> direct(runner, images, s.batch(), leadSeconds)).get();
            return directThread.submit(() -> direct(runner, images, s.batch(), sliceSeconds)).get();
          }
          String scenario = "pool, max_batch_size " + s.batch();
          closedLoop(scenario, c, leadSeconds, sender.apply(s.batch()), registry, "resnet-b" + s.batch());
          return closedLoop(scenario, c, sliceSeconds, sender.apply(s.batch()), registry, "resnet-b" + s.batch());
        } catch (Exception e) {
          throw new IllegalStateException(s + ": " + e.getMessage(), e);
        }
      }, Result::perSecond, (round, results) -> {
        print("round " + round.round(), results);
        System.out.println(AbSlices.line(round));
      });
      System.out.println();
      System.out.println(AbSlices.summarize(ab));
    } finally {
      directThread.submit(runner::close).get();
      directThread.shutdown();
      rt.close();
    }
  }

  private static void print(String heading, List<Result> results) {
    System.out.printf("%n## %s%n%-32s %11s %10s %10s %10s %10s %8s%n", heading, "scenario", "concurrency",
        "images/s", "p50 ms", "p99 ms", "mean batch", "errors");
    for (Result r : results) {
      System.out.printf(Locale.ROOT, "%-32s %11s %10.1f %10.2f %10.2f %10.2f %8d%n", r.scenario,
          r.concurrency == 0 ? "-" : Integer.toString(r.concurrency), r.perSecond(),
          r.latency.getValueAtPercentile(50) / 1e6, r.latency.getValueAtPercentile(99) / 1e6, r.meanBatch, r.errors);
    }
  }

  private static List<Integer> ints(String csv) {
    return Arrays.stream(csv.split(",")).map(String::trim).map(Integer::valueOf).toList();
  }

  private static InferenceRequest[] images(ModelSpec model, int n) {
    long[] shape = model.inputs().get(0).shape();
    shape[0] = 1;
    InferenceRequest[] out = new InferenceRequest[n];
    for (int k = 0; k < n; k++) {
      float[] pixels = new float[Math.toIntExact(Tensor.elementCount(shape))];
      for (int i = 0; i < pixels.length; i++) {
        pixels[i] = ((i * 31 + k * 17) % 251) / 251f;
      }
      out[k] = new InferenceRequest("img-" + k, List.of(Tensor.ofFloats(model.inputs().get(0).name(), shape, pixels)),
          List.of(), Map.of());
    }
    return out;
  }

  /** One thread calling the runner back to back with batches of {@code batch} images: the compute limit. */
  private static Result direct(ModelRunner runner, InferenceRequest[] images, int batch, double seconds) {
    Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    List<InferenceRequest> requests = Collections.nCopies(batch, images[0]);
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    long calls = 0;
    while (calls < 3 || System.nanoTime() < end) {
      long t = System.nanoTime();
      runner.infer(requests);
      h.recordValue(System.nanoTime() - t);
      calls++;
    }
    return new Result("direct runner, batch " + batch, 0, calls * batch, 0, (System.nanoTime() - start) / 1e9, h,
        batch);
  }

  /**
   * {@code concurrency} clients, each sending its next request as soon as its last was answered, for
   * {@code seconds}; latency is per request, from send to answer.
   */
  private static Result closedLoop(String scenario, int concurrency, double seconds,
                                   IntFunction<CompletableFuture<?>> send, MeterRegistry registry, String deployment)
      throws Exception {
    double[] before = batchStats(registry, deployment);
    Recorder recorder = new Recorder(3);
    AtomicLong done = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    AtomicLong sequence = new AtomicLong();
    CountDownLatch finished = new CountDownLatch(concurrency);
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    for (int c = 0; c < concurrency; c++) {
      new Object() {
        void next() {
          long t = System.nanoTime();
          send.apply((int) sequence.getAndIncrement()).whenComplete((r, e) -> {
            long now = System.nanoTime();
            if (e != null) {
              errors.incrementAndGet();
            } else {
              recorder.recordValue(now - t);
              done.incrementAndGet();
            }
            if (now < end) {
              next();
            } else {
              finished.countDown();
            }
          });
        }
      }.next();
    }
    if (!finished.await((long) seconds + 120, TimeUnit.SECONDS)) {
      throw new IllegalStateException(scenario + ": clients did not finish");
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    double[] after = batchStats(registry, deployment);
    double meanBatch = after[0] == before[0] ? 0 : (after[1] - before[1]) / (after[0] - before[0]);
    return new Result(scenario, concurrency, done.get(), errors.get(), elapsed, recorder.getIntervalHistogram(),
        meanBatch);
  }

  /** {batches, rows} the pool has dispatched so far, from its {@code kiln.pool.batch.size} meter. */
  private static double[] batchStats(MeterRegistry registry, String deployment) {
    DistributionSummary d = registry.find("kiln.pool.batch.size").tag("deployment", deployment).summary();
    return d == null ? new double[2] : new double[] {d.count(), d.totalAmount()};
  }
}
