package io.kiln.pools.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.engines.pytorch.tools.BuildModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.HdrHistogram.Recorder;

/**
 * The compute limit of a load-test scenario: {@link ModelRunner#infer} called back to back, in process,
 * by {@code --callers} threads (each with its own runner, as each pool worker has), at each batch size.
 * Writes one JSON per batch size in the load generator's run-summary format ({@code RunResult}: rows
 * count as requests, the latency of a row is that of the call that carried it, {@code latencyFrom: sent}),
 * so that {@code LoadGen compare} and {@code ResultsMarkdown} put it beside the HTTP runs. Not a test: run
 * by {@code loadtest/run.sh}.
 *
 * <p>Usage: {@code DirectBaseline --model mlp|resnet18 --out DIR [--dir MODEL_DIR] [--image-size 64]
 * [--batches 1,8] [--callers 1] [--threads 1] [--seconds 5] [--warmup 2] [--prefix direct]} writes
 * {@code DIR/<prefix>-b<batch>.json}. Defaults: {@code models/mlp} (TorchScript) or
 * {@code models/resnet18-<size>} (built there first if missing). Blocks for about
 * {@code (warmup + seconds)} per batch size.
 *
 * <p>{@code --cold-shapes N} instead loads one runner warmed at batch 1 only and prints, for every batch size
 * 1..N, the first call's time and the next call's: what a pool pays the first time dynamic batching forms a
 * batch size that warm-up did not cover.
 */
public final class DirectBaseline {

  private static final int CALLS_PER_SHAPE = 6;

  private DirectBaseline() {
  }

  public static void main(String[] args) throws Exception {
    String model = null;
    Path out = null;
    Path dir = null;
    int imageSize = 64;
    List<Integer> batches = List.of(1, 8);
    int callers = 1;
    int threads = 1;
    double seconds = 5;
    double warmup = 2;
    String prefix = "direct";
    int coldShapes = 0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--cold-shapes" -> coldShapes = Integer.parseInt(args[++i]);
        case "--model" -> model = args[++i];
        case "--out" -> out = Path.of(args[++i]);
        case "--dir" -> dir = Path.of(args[++i]);
        case "--image-size" -> imageSize = Integer.parseInt(args[++i]);
        case "--batches" -> batches = Arrays.stream(args[++i].split(",")).map(String::trim).map(Integer::valueOf).toList();
        case "--callers" -> callers = Integer.parseInt(args[++i]);
        case "--threads" -> threads = Integer.parseInt(args[++i]);
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--warmup" -> warmup = Double.parseDouble(args[++i]);
        case "--prefix" -> prefix = args[++i];
        default -> throw new IllegalArgumentException("unknown argument '" + args[i] + "'; see the class comment");
      }
    }
    if (model == null || (out == null && coldShapes == 0)) {
      throw new IllegalArgumentException("--model mlp|resnet18 and --out DIR are required; see the class comment");
    }
    ModelSpec.Builder spec = switch (model) {
      case "mlp" -> ModelSpec.builder().uri(dir != null ? dir : Path.of("models", "mlp"))
          .format(ModelSpec.FORMAT_TORCHSCRIPT).input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 10);
      case "resnet18" -> {
        Path d = dir != null ? dir : Path.of("models", "resnet18-" + imageSize);
        BuildModels.buildResNet18(d, imageSize, 1000, false);
        yield BuildModels.resnet18Spec(d, imageSize, 1000).toBuilder();
      }
      default -> throw new IllegalArgumentException("--model: mlp or resnet18, got " + model);
    };
    List<Integer> warm = new ArrayList<>(batches);
    ModelSpec ms = spec.engine(ModelSpec.ENGINE_PYTORCH).intraOpThreads(threads).interOpThreads(1)
        .warmupBatchSizes(warm).build();
    InferenceRequest row = row(ms);
    if (coldShapes > 0) {
      coldShapes(ms.toBuilder().warmupBatchSizes(1).build(), row, coldShapes);
      return;
    }
    Files.createDirectories(out);
    System.out.printf(Locale.ROOT, "# direct ModelRunner.infer: %s (%s), %d caller(s), %d intra-op thread(s), "
        + "%.0f s per batch size after %.0f s warm-up%n", model, ms.uri(), callers, threads, seconds, warmup);
    System.out.printf("%-14s %12s %10s %10s %10s%n", "name", "rows/s", "p50 ms", "p99 ms", "calls");

    for (int b : batches) {
      Map<String, Object> result = measure(ms, row, b, callers, warmup, seconds, prefix, model, threads);
      Path file = out.resolve(prefix + "-b" + b + ".json");
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), result);
      @SuppressWarnings("unchecked")
      Map<String, Object> l = (Map<String, Object>) result.get("latencyMs");
      System.out.printf(Locale.ROOT, "%-14s %12.1f %10.3f %10.3f %10d%n", result.get("name"), result.get("achievedRps"),
          l.get("p50"), l.get("p99"), (long) result.get("requests") / b);
    }
  }

  private static void coldShapes(ModelSpec spec, InferenceRequest row, int max) {
    System.out.printf(Locale.ROOT, "# the first %d calls per batch size, in order; runner warmed at batch 1 only (%s)%n",
        CALLS_PER_SHAPE, spec.uri());
    System.out.printf("%6s  %s%n", "batch", "call times, ms");
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      for (int b = 1; b <= max; b++) {
        List<InferenceRequest> batch = Collections.nCopies(b, row);
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%6d ", b));
        for (int k = 0; k < CALLS_PER_SHAPE; k++) {
          long t0 = System.nanoTime();
          runner.infer(batch);
          line.append(String.format(Locale.ROOT, " %8.1f", (System.nanoTime() - t0) / 1e6));
        }
        System.out.println(line);
      }
    }
  }

  private static InferenceRequest row(ModelSpec spec) {
    long[] shape = spec.inputs().get(0).shape().clone();
    shape[0] = 1;
    float[] v = new float[Math.toIntExact(Tensor.elementCount(shape))];
    for (int i = 0; i < v.length; i++) {
      v[i] = ((i * 31) % 251) / 251f;
    }
    return new InferenceRequest("row", List.of(Tensor.ofFloats(spec.inputs().get(0).name(), shape, v)), List.of(), Map.of());
  }

  /**
   * Warm-up then measurement with {@code callers} threads, each loading its own runner on itself (as a
   * worker loads on its own thread) the first time.
   */
  private static Map<String, Object> measure(ModelSpec spec, InferenceRequest row, int batch, int callers,
      double warmup, double seconds, String prefix, String model, int threads) throws Exception {
    List<InferenceRequest> requests = Collections.nCopies(batch, row);
    Recorder recorder = new Recorder(3);
    AtomicLong rows = new AtomicLong();
    AtomicBoolean measuring = new AtomicBoolean();
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch loaded = new CountDownLatch(callers);
    List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threadsList = new ArrayList<>();
    for (int c = 0; c < callers; c++) {
      Thread t = new Thread(() -> {
        ModelRunner runner;
        try {
          runner = ModelRunners.load(spec, List.of());
        } catch (Throwable e) {
          failures.add(e);
          loaded.countDown();
          return;
        }
        loaded.countDown();
        try (runner) {
          while (!stop.get()) {
            long t0 = System.nanoTime();
            runner.infer(requests);
            long dt = System.nanoTime() - t0;
            if (measuring.get()) {
              recorder.recordValueWithCount(Math.max(1, dt / 1000), batch);
              rows.addAndGet(batch);
            }
          }
        } catch (Throwable e) {
          failures.add(e);
        }
      }, "direct-" + c);
      threadsList.add(t);
      t.start();
    }
    loaded.await();
    if (!failures.isEmpty()) {
      stop.set(true);
      throw new IllegalStateException("a runner failed to load", failures.get(0));
    }
    parkUntil(System.nanoTime() + (long) (warmup * 1e9)); // the callers run unrecorded meanwhile: the warm-up
    String startedAt = Instant.now().toString();
    recorder.getIntervalHistogram();
    measuring.set(true);
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    Histogram total = new Histogram(3);
    List<Map<String, Object>> series = new ArrayList<>();
    long lastRows = 0;
    long lastTick = start;
    while (System.nanoTime() < end) {
      long next = Math.min(end, lastTick + 1_000_000_000L);
      parkUntil(next);
      long now = System.nanoTime();
      Histogram h = recorder.getIntervalHistogram();
      total.add(h);
      long r = rows.get();
      double dt = (now - lastTick) / 1e9;
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("t", round((now - start) / 1e9));
      s.put("seconds", round(dt));
      s.put("requests", r - lastRows);
      s.put("rps", round((r - lastRows) / dt));
      s.put("errors", 0);
      s.put("p50", h.getTotalCount() == 0 ? null : ms(h, h.getValueAtPercentile(50)));
      s.put("p99", h.getTotalCount() == 0 ? null : ms(h, h.getValueAtPercentile(99)));
      s.put("max", h.getTotalCount() == 0 ? null : ms(h, h.getMaxValue()));
      series.add(s);
      lastRows = r;
      lastTick = now;
    }
    measuring.set(false);
    stop.set(true);
    for (Thread t : threadsList) {
      t.join();
    }
    total.add(recorder.getIntervalHistogram());
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a runner failed", failures.get(0));
    }
    double measured = (lastTick - start) / 1e9;
    long n = rows.get();
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("target", "in-process ModelRunner.infer (" + spec.uri() + ")");
    config.put("protocol", "direct");
    config.put("model", model);
    config.put("mode", "closed");
    config.put("connections", callers);
    config.put("batch", batch);
    config.put("intraOpThreads", threads);
    config.put("warmupSeconds", warmup);
    config.put("durationSeconds", seconds);
    Map<String, Object> latency = new LinkedHashMap<>();
    latency.put("count", total.getTotalCount());
    latency.put("min", ms(total, total.getMinValue()));
    latency.put("mean", round(total.getMean() / 1000));
    latency.put("p50", ms(total, total.getValueAtPercentile(50)));
    latency.put("p90", ms(total, total.getValueAtPercentile(90)));
    latency.put("p99", ms(total, total.getValueAtPercentile(99)));
    latency.put("p999", ms(total, total.getValueAtPercentile(99.9)));
    latency.put("max", ms(total, total.getMaxValue()));
    List<Map<String, Object>> distribution = new ArrayList<>();
    for (HistogramIterationValue v : total.percentiles(5)) {
      double pct = Math.min(100.0, v.getPercentileLevelIteratedTo());
      distribution.add(Map.of("percentile", round(pct), "latencyMs", ms(total, v.getValueIteratedTo())));
      if (pct >= 100.0) {
        break;
      }
    }
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("name", prefix + "-b" + batch);
    r.put("config", config);
    r.put("startedAt", startedAt);
    r.put("latencyFrom", "sent");
    r.put("measuredSeconds", round(measured));
    r.put("requests", n);
    r.put("ok", n);
    r.put("errors", 0);
    r.put("achievedRps", round(n / measured));
    r.put("okRps", round(n / measured));
    r.put("offeredRps", null);
    r.put("latencyMs", latency);
    r.put("outcomes", Map.of("ok", n));
    r.put("series", series);
    r.put("distribution", distribution);
    return r;
  }

  private static void parkUntil(long deadlineNs) {
    for (long left = deadlineNs - System.nanoTime(); left > 0; left = deadlineNs - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  private static double ms(Histogram h, long micros) {
    return micros == 0 ? 0 : round(h.highestEquivalentValue(micros) / 1000.0);
  }

  private static double round(double v) {
    return Math.round(v * 1e6) / 1e6;
  }
}
