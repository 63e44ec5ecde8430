package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The multiplexing benchmark ({@code loadtest/bench-multiplex.sh}) and its CI-sized run: a repository of
 * {@code mux.models} copies of the project's ONNX MLP (each a real load) on two assembled nodes, one worker per node
 * keeping K={@code mux.k} models, and closed-loop HTTP clients (the loadtest module's generator) sending {@code /v2/models/m<i>/infer} for a model drawn
 * Zipf(s={@code mux.zipf}) over the repository, alternating the two gateways. Phase {@code zipf}: the whole mix
 * (misses included); phase {@code hot}: only the K most popular models, after one warm pass (the holders keep them, so
 * few or no misses). Each phase prints one {@code [bench]} line: batch hit ratio (the pools' hits / (hits + misses)),
 * loads, p50 and p99. Knobs ({@code -Dkiln.bench.<name>}): {@code mux.requests} per phase (CI 200; the script
 * 20000), {@code mux.concurrency} (CI 4; the script 8), {@code mux.models} (20), {@code mux.k} (4),
 * {@code mux.zipf} (1.1), {@code mux.seed} (42). Nothing is asserted about time.
 */
@Tag("slow")
class MultiplexBenchTest {

  static final int REQUESTS = Integer.parseInt(BenchStats.knob("mux.requests", "200"));
  static final int CONCURRENCY = Integer.parseInt(BenchStats.knob("mux.concurrency", "4"));
  static final int MODELS = Integer.parseInt(BenchStats.knob("mux.models", "20"));
  static final int K = Integer.parseInt(BenchStats.knob("mux.k", "4"));
  static final double ZIPF = Double.parseDouble(BenchStats.knob("mux.zipf", "1.1"));
  static final long SEED = Long.parseLong(BenchStats.knob("mux.seed", "42"));

  private final Http http = new Http();

  @Test
  void hitRatioAndLatencyOfAZipfMixOverTwoNodes(@TempDir Path dir) throws Exception {
    for (int i = 0; i < MODELS; i++) {
      Files.copy(ServingCluster.repositoryRoot().resolve("models/mlp-onnx/model.onnx"),
          Files.createDirectories(dir.resolve("m" + i)).resolve("model.onnx"));
    }
    String yaml = """
        deployments:
          - name: zoo
            version: "1"
            repository:
              path: %s
              defaults:
                inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
                outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
                threads: {intra_op: 1, inter_op: 1}
              max_models_per_worker: %d
              max_concurrent_loads: 2
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
            batching: {max_batch_size: 8, max_batch_delay_ms: 0}
            queue: {max_queued: 1024, timeout_ms: 60000}
        """.formatted(dir, K);
    try (ServingCluster cluster = ServingCluster.start("node-1", "node-2")) {
      cluster.deploy(yaml);
      cluster.awaitReady("zoo", 2);
      int[] ports = cluster.nodeIds().stream().mapToInt(n -> cluster.node(n).httpPort()).toArray();
      double[] cdf = zipf(MODELS, ZIPF);

      Phase all = run(ports, REQUESTS, CONCURRENCY, r -> sample(cdf, r));
      print("zipf", all);
      int[] hot = new int[Math.min(K, MODELS)];
      Arrays.setAll(hot, i -> i);
      run(ports, hot.length * 2, 1, r -> hot[r.nextInt(hot.length)]); // warm pass: each hot model loaded
      Phase hotOnly = run(ports, REQUESTS, CONCURRENCY, r -> hot[r.nextInt(hot.length)]);
      print("hot", hotOnly);

      for (Phase p : List.of(all, hotOnly)) {
        assertThat(p.errors()).as("%s", p.load().lostReasons()).isZero();
        assertThat(p.load().sent()).isEqualTo(REQUESTS);
        assertThat(p.hits() + p.misses()).as("every request was one batch at least").isPositive();
      }
      assertThat(all.misses()).as("a Zipf mix over more models than slots misses").isPositive();
    }
  }

  /** What one phase measured: the clients' latencies and the pools' counts over the phase. */
  record Phase(LoadDriver.Outcome load, double hits, double misses, double loads) {
    double hitRatio() {
      return hits + misses == 0 ? Double.NaN : hits / (hits + misses);
    }

    long errors() {
      return load.sent() - load.ok();
    }
  }

  private static void print(String phase, Phase p) {
    System.out.println(BenchStats.f("[bench] multiplex phase=%s models=%d k=%d nodes=2 zipf=%.2f c=%d: %d requests,"
            + " %d errors, hit ratio %.1f %% (%.0f hits, %.0f misses), %.0f loads, p50 %.2f ms p99 %.2f ms", phase, MODELS,
        K, ZIPF, CONCURRENCY, p.load().sent(), p.errors(), 100 * p.hitRatio(), p.hits(), p.misses(), p.loads(),
        p.load().okP50Millis(), p.load().okP99Millis()));
  }

  interface ModelChoice {
    int next(SplittableRandom random);
  }

  /**
   * {@code requests} requests from {@code clients} closed loops through the loadtest module's generator, request
   * {@code i} to gateway {@code i % 2}, for the {@code i}-th model of a sequence drawn once from the seed.
   */
  private Phase run(int[] ports, int requests, int clients, ModelChoice choice) {
    double[] before = counts(ports);
    SplittableRandom random = new SplittableRandom(SEED);
    int[] models = new int[requests];
    Arrays.setAll(models, i -> choice.next(random));
    byte[] body = body().getBytes(StandardCharsets.UTF_8);
    LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
    LoadDriver.Outcome load = driver.requests(Arrays.stream(ports).boxed().toList(), clients, requests,
        i -> new LoadDriver.Request("/v2/models/m" + models[i] + "/infer", body, null, null));
    double[] after = counts(ports);
    return new Phase(load, after[0] - before[0], after[1] - before[1], after[2] - before[2]);
  }

  // Hits, misses and successful loads of the deployment's pools, summed over both nodes' /metrics.
  private double[] counts(int[] ports) {
    double[] out = new double[3];
    for (int port : ports) {
      String text = http.get(port, "/metrics").text();
      out[0] += Math.max(0, PromText.parse(text).sum("kiln_pool_multiplex_hits_total", Map.of("deployment", "zoo")));
      out[1] += Math.max(0, PromText.parse(text).sum("kiln_pool_multiplex_misses_total", Map.of("deployment", "zoo")));
      out[2] += Math.max(0, PromText.parse(text).sum("kiln_pool_multiplex_loads_total",
          Map.of("deployment", "zoo", "outcome", "ok")));
    }
    return out;
  }

  private static String body() {
    float[] data = new float[64];
    for (int i = 0; i < 64; i++) {
      data[i] = (i % 17) / 16f;
    }
    return OipRequest.fp32("input", new long[] {1, 64}, data).json();
  }

  /** The cumulative distribution of Zipf(s) over ranks 0..n-1 (rank 0 the most popular). */
  static double[] zipf(int n, double s) {
    double[] cdf = new double[n];
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += 1 / Math.pow(i + 1, s);
      cdf[i] = sum;
    }
    for (int i = 0; i < n; i++) {
      cdf[i] /= sum;
    }
    return cdf;
  }

  static int sample(double[] cdf, SplittableRandom random) {
    int i = Arrays.binarySearch(cdf, random.nextDouble());
    return Math.min(cdf.length - 1, i >= 0 ? i : -i - 1);
  }
}
