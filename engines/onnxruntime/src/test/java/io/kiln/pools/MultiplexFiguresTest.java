package io.kiln.pools;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.Resources;
import io.micrometer.core.instrument.Counter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Multiplexing figures: 20 copies of the project's ONNX MLP (each a model folder of its own, so each is a real load)
 * over one pool of 2 workers × K=4, a closed loop of {@code -Dkiln.multiplex.concurrency} (8) requests in flight whose
 * models follow a Zipf law (exponent {@code -Dkiln.multiplex.zipf}, 1.1). Runs only with
 * {@code -Dkiln.multiplex.requests=N} (it loads the machine): phase 1, N requests of the Zipf mix (misses included);
 * phase 2, N requests over the 6 most popular models only, after a warm pass (no misses: checked). Prints hit rate,
 * loads, evictions and p50/p99 per phase, and writes them to {@code target/multiplex-figures.txt}.
 */
class MultiplexFiguresTest {

  private static final int REQUESTS = Integer.getInteger("kiln.multiplex.requests", 0);
  private static final int CONCURRENCY = Integer.getInteger("kiln.multiplex.concurrency", 8);
  private static final double ZIPF = Double.parseDouble(System.getProperty("kiln.multiplex.zipf", "1.1"));
  private static final int MODELS = 20;

  @Test
  void zipfMixOverTwentyModelsOnTwoWorkersKeepingFourEach(@TempDir Path dir) throws Exception {
    Assumptions.assumeTrue(REQUESTS > 0, "figures only when -Dkiln.multiplex.requests=N");
    List<ModelRepository.Entry> models = new ArrayList<>();
    for (int i = 0; i < MODELS; i++) {
      Path folder = Files.createDirectories(dir.resolve("mlp" + i));
      Files.copy(ProjectModels.modelsDir().resolve("mlp-onnx/model.onnx"), folder.resolve("model.onnx"));
      models.add(new ModelRepository.Entry("mlp" + i, ProjectModels.mlpOnnx().uri(folder).intraOpThreads(1)
          .interOpThreads(1).build()));
    }
    ModelRepository repo = new ModelRepository(models, 4, 2);
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ZERO).maxQueued(1024).build();
    try (PoolNodes nodes = new PoolNodes("a")) {
      PoolSpec spec = new PoolSpec("zipf", "1", "a", models.get(0).model(), config, 2, Resources.cpu(1), 0,
          HealthSpec.DEFAULT, repo);
      ActorHandle<PoolManager> m = nodes.start(spec, 2);
      double[] cdf = zipf(MODELS, ZIPF);
      Random random = new Random(42);

      StringBuilder out = new StringBuilder();
      out.append(String.format(Locale.ROOT, "multiplexing: %d models, 2 workers x K=4, max_concurrent_loads 2, "
          + "closed loop c=%d, Zipf s=%.2f, %d requests per phase%n", MODELS, CONCURRENCY, ZIPF, REQUESTS));
      Phase mix = run(nodes, m, REQUESTS, () -> pick(cdf, random.nextDouble()));
      out.append(mix.line("phase 1, Zipf mix (misses included)"));
      run(nodes, m, 200, () -> random.nextInt(6)); // warm: the 6 most popular models only
      Phase hot = run(nodes, m, REQUESTS, () -> random.nextInt(6));
      out.append(hot.line("phase 2, 6 most popular models (no misses)"));
      System.out.print(out);
      Files.writeString(Path.of("target", "multiplex-figures.txt"), out);
      assertThat(mix.failed).isZero();
      assertThat(hot.failed).isZero();
      assertThat(hot.misses).as("the hot set fits: 2 workers x 4 models").isZero();
    }
  }

  private record Phase(Histogram latency, double hits, double misses, double loads, double evictions, int failed) {
    String line(String name) {
      return String.format(Locale.ROOT, "%s: hit rate %.1f%% (%d hits, %d misses), %d loads, %d evictions, "
              + "p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms%n", name,
          100 * hits / Math.max(1, hits + misses), (long) hits, (long) misses, (long) loads, (long) evictions,
          latency.getValueAtPercentile(50) / 1e3, latency.getValueAtPercentile(99) / 1e3,
          latency.getValueAtPercentile(99.9) / 1e3, latency.getMaxValue() / 1e3);
    }
  }

  private static Phase run(PoolNodes nodes, ActorHandle<PoolManager> m, int n, java.util.function.IntSupplier model)
      throws Exception {
    double h0 = count(nodes, "kiln.pool.multiplex.hits");
    double m0 = count(nodes, "kiln.pool.multiplex.misses");
    double l0 = count(nodes, "kiln.pool.multiplex.loads");
    double e0 = count(nodes, "kiln.pool.multiplex.evictions");
    Histogram latency = new Histogram(3);
    AtomicInteger issued = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    List<CompletableFuture<Void>> loops = new ArrayList<>();
    for (int c = 0; c < CONCURRENCY; c++) {
      loops.add(loop(m, n, issued, model, latency, failed));
    }
    CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).get(10, java.util.concurrent.TimeUnit.MINUTES);
    return new Phase(latency, count(nodes, "kiln.pool.multiplex.hits") - h0,
        count(nodes, "kiln.pool.multiplex.misses") - m0, count(nodes, "kiln.pool.multiplex.loads") - l0,
        count(nodes, "kiln.pool.multiplex.evictions") - e0, failed.get());
  }

  // One closed-loop client: the next request goes when the last is answered.
  private static CompletableFuture<Void> loop(ActorHandle<PoolManager> m, int n, AtomicInteger issued,
                                              java.util.function.IntSupplier model, Histogram latency,
                                              AtomicInteger failed) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    Runnable[] next = new Runnable[1];
    next[0] = () -> {
      int i = issued.getAndIncrement();
      if (i >= n) {
        done.complete(null);
        return;
      }
      int k;
      synchronized (issued) {
        k = model.getAsInt();
      }
      InferenceRequest r = ProjectModels.mlpRequest(1, i);
      InferenceRequest named = new InferenceRequest("", r.inputs(), List.of(), Map.of(ModelRepository.MODEL_ID, "mlp" + k));
      long start = System.nanoTime();
      m.callAsync(PoolManager::infer, named, 60_000L).whenComplete((resp, e) -> {
        synchronized (latency) {
          latency.recordValue(Math.max(1, (System.nanoTime() - start) / 1_000));
        }
        if (e != null) {
          failed.incrementAndGet();
        }
        next[0].run();
      });
    };
    next[0].run();
    return done;
  }

  private static double count(PoolNodes nodes, String meter) {
    double sum = 0;
    for (Counter c : nodes.registry("a").find(meter).tag("deployment", "zipf").counters()) {
      if (!c.getId().getName().equals("kiln.pool.multiplex.loads") || "ok".equals(c.getId().getTag("outcome"))) {
        sum += c.count();
      }
    }
    return sum;
  }

  private static double[] zipf(int n, double s) {
    double[] cdf = new double[n];
    double total = 0;
    for (int i = 0; i < n; i++) {
      total += 1 / Math.pow(i + 1, s);
      cdf[i] = total;
    }
    for (int i = 0; i < n; i++) {
      cdf[i] /= total;
    }
    return cdf;
  }

  private static int pick(double[] cdf, double u) {
    for (int i = 0; i < cdf.length; i++) {
      if (u <= cdf[i]) {
        return i;
      }
    }
    return cdf.length - 1;
  }
}
