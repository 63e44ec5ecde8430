package io.kiln.pipelines;

import static io.kiln.pipelines.JobCluster.DEPLOYMENT;
import static io.kiln.pipelines.JobCluster.HEAD;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobState;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolStats;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * Jobs sharing pools with online traffic, on two in-process nodes whose deployment is {@code builtin:sleep}
 * (one worker per node, the pool defaults of code: each batch holds its worker as many milliseconds as its
 * largest input element). Figures are printed ({@code [jobs]} lines), never asserted: these 2 cores are shared.
 *
 * <p>The throughput benchmark runs only with {@code -Dkiln.bench.jobs=true} ({@code loadtest/bench-jobs.sh}):
 * {@code -Dkiln.bench.inputs} (10000), {@code -Dkiln.bench.sleepMs} (2), {@code -Dkiln.bench.onlineSeconds} (10),
 * {@code -Dkiln.bench.rounds} (2: online and job phases alternate, so a shared machine's load hits both alike),
 * {@code -Dkiln.bench.jfr} (a file: a JFR CPU profile of the last job phase).
 */
@Tag("slow")
class JobLoadTest {

  static final ModelSpec SLEEP = ModelSpec.builder().uri("builtin:sleep").engine(ModelSpec.ENGINE_BUILTIN)
      .inputs(List.of(PipelineCluster.INPUT)).build();

  @TempDir
  Path tmp;

  /** {@code n} one-row inputs whose elements are {@code value}, as files {@code in-<i>.f32}. */
  static Path inputs(Path dir, int n, float value) throws Exception {
    Files.createDirectories(dir);
    byte[] row = PipelineCluster.floatsToBytes(new float[] {value, value, value, value});
    for (int i = 0; i < n; i++) {
      Files.write(dir.resolve("in-" + i + ".f32"), row);
    }
    return dir;
  }

  static String job(String name, String folder, String output, String priority, int perNode) {
    return """
        name: %s
        deployment: ident
        inputs: {folder: %s}
        output: %s
        priority: %s
        per_node: %d
        max_in_flight: %d
        """.formatted(name, folder, output, priority, perNode, Math.max(64, 4 * perNode));
  }

  /** Online requests, one at a time, to {@code node}'s pool until {@code until} is true (at least 50). */
  static long[] onlineWhile(PoolClient client, String node, float ms, java.util.function.BooleanSupplier until) {
    List<Long> lat = new ArrayList<>();
    while (lat.size() < 50 || (!until.getAsBoolean() && lat.size() < 20_000)) {
      long[] one = online(client, node, 10, ms);
      for (long l : one) {
        lat.add(l);
      }
    }
    return lat.stream().mapToLong(Long::longValue).sorted().toArray();
  }

  /** Online requests, one at a time, to {@code node}'s pool for {@code count} requests; latencies in µs. */
  static long[] online(PoolClient client, String node, int count, float ms) {
    long[] lat = new long[count];
    for (int i = 0; i < count; i++) {
      long t0 = System.nanoTime();
      result(client.infer(RequestContext.within("", 30_000), DEPLOYMENT, "1", node, new InferenceRequest("online-" + i,
          List.of(Tensor.ofFloats("input", new long[] {1, 4}, new float[] {ms, ms, ms, ms})), List.of(), Map.of())));
      lat[i] = (System.nanoTime() - t0) / 1000;
    }
    Arrays.sort(lat);
    return lat;
  }

  static String pct(long[] sorted) {
    return String.format(Locale.ROOT, "p50 %.2f ms, p99 %.2f ms (n=%d)", sorted[sorted.length / 2] / 1000.0,
        sorted[(int) Math.min(sorted.length - 1, Math.round(sorted.length * 0.99))] / 1000.0, sorted.length);
  }

  @Test
  void onlineRequestsKeepBeingServedWhileAJobRuns() throws Exception {
    try (JobCluster c = new JobCluster(tmp, SLEEP, HEAD, "w1")) {
      // 5 ms per request: long enough that queueing behind job requests shows above this machine's noise.
      float ms = 5f;
      int n = 800;
      inputs(tmp.resolve("media-low"), n, ms);
      inputs(tmp.resolve("media-normal"), n, ms);
      PoolClient client = new PoolClient(c.pc.node(HEAD));
      online(client, HEAD, 100, 1f); // warm-up, and a job to warm the job path
      inputs(tmp.resolve("media-warm"), 500, 1f);
      c.awaitEnd(HEAD, result(c.jobs(HEAD).submit(c.load(job("warm", "media-warm", "out-warm", "normal", 8)))));
      long[] alone = online(client, HEAD, 300, ms);
      List<String> report = new ArrayList<>();
      report.add("online alone (builtin:sleep 5 ms a batch, 1 worker per node, code-default batching): " + pct(alone));
      for (String priority : List.of("low", "normal")) {
        JobSpec spec = c.load(job("load-" + priority, "media-" + priority, "out-" + priority, priority, 8));
        String id = result(c.jobs(HEAD).submit(spec));
        long[] during = onlineWhile(client, HEAD, ms, () -> result(c.jobs(HEAD).status(id)).map(x -> x.state().terminal())
            .orElse(false));
        JobStatus end = c.awaitEnd(HEAD, id);
        assertThat(end.state()).isEqualTo(JobState.SUCCEEDED);
        assertThat(end.done()).isEqualTo(n);
        report.add("online during a priority-" + priority + " job of " + n + " inputs (per_node 8): " + pct(during)
            + "; job " + String.format(Locale.ROOT, "%.0f", end.rowsPerSecond()) + " inputs/s, results by node "
            + end.resultsByNode());
      }
      report.forEach(l -> System.out.println("[jobs] " + l));
    }
  }

  @Test
  @EnabledIfSystemProperty(named = "kiln.bench.jobs", matches = "true")
  void aJobKeepsThePoolsAsBusyAsASaturatingOnlineLoad() throws Exception {
    bench(tmp, Integer.getInteger("kiln.bench.inputs", 10_000),
        Float.parseFloat(System.getProperty("kiln.bench.sleepMs", "2")), Integer.getInteger("kiln.bench.onlineSeconds", 10),
        Integer.getInteger("kiln.bench.perNode", 8), Integer.getInteger("kiln.bench.rounds", 2),
        System.getProperty("kiln.bench.priority", "low"), System.getProperty("kiln.bench.jfr", ""));
  }

  /** The benchmark's path at CI size: every phase runs and the job's results are all there; figures printed only. */
  @Test
  void theThroughputBenchmarkRunsAtCiSize() throws Exception {
    bench(tmp, 400, 2f, 1, 32, 1, "low", "");
  }

  /**
   * Alternates a saturating online load and a job over {@code n} fresh inputs, {@code rounds} times, printing each
   * phase's busy fraction and rate and the ratio of their sums; asserts only that each job finished whole.
   */
  static void bench(Path tmp, int n, float ms, int onlineSeconds, int perNode, int rounds, String priority, String jfr)
      throws Exception {
    List<String> nodes = List.of(HEAD, "w1");
    try (JobCluster c = new JobCluster(tmp, SLEEP, HEAD, "w1")) {
      PoolClient client = new PoolClient(c.pc.node(HEAD));
      // The job path is warmed as the online one is (its clients' first answers): a job of its own, not measured.
      inputs(tmp.resolve("media-warm"), Math.min(n, 2000), ms);
      c.awaitEnd(HEAD, result(c.jobs(HEAD).submit(c.load(job("bench-warm", "media-warm", "out-warm", priority,
          perNode)))));
      double onlineSum = 0;
      double jobSum = 0;
      for (int round = 0; round < rounds; round++) {
        // A/B in the same run, interleaved: the other helpers' load on this machine hits both phases alike.
        Phase online = saturate(c, client, nodes, ms, onlineSeconds);
        inputs(tmp.resolve("media-" + round), n, ms);
        JobSpec spec = c.load(job("bench-" + round, "media-" + round, "out-" + round, priority, perNode));
        long calls0 = c.modelCalls(HEAD, "w1");
        long j0 = System.nanoTime();
        jdk.jfr.Recording rec = jfr.isEmpty() || round != rounds - 1 ? null : startJfr();
        String id = result(c.jobs(HEAD).submit(spec));
        Busy during = Busy.sample(c, nodes);
        JobStatus end = c.awaitEnd(HEAD, id);
        double busyJob = during.stop();
        double jobSecs = (System.nanoTime() - j0) / 1e9;
        if (rec != null) {
          rec.stop();
          rec.dump(Path.of(jfr));
          rec.close();
        }
        long calls = c.modelCalls(HEAD, "w1") - calls0;
        var results = JobCluster.results(tmp.resolve("out-" + round));
        assertThat(end.state()).isEqualTo(JobState.SUCCEEDED);
        assertThat(results).hasSize(n);
        System.out.printf(Locale.ROOT, "[jobs] round %d stages: fetch %.1f ms, analysis %.1f ms (means of %d results)%n",
            round, results.values().stream().mapToLong(r -> r.path("fetch_ms").asLong()).average().orElse(0),
            results.values().stream().mapToLong(r -> r.path("infer_ms").asLong()).average().orElse(0), results.size());
        onlineSum += online.busy();
        jobSum += busyJob;
        System.out.printf(Locale.ROOT, "[jobs] round %d: online busy %.1f%% (%.0f calls/s, model time %.0f%% of the"
            + " workers); job busy %.1f%% (%.0f inputs/s over %.1f s, model time %.0f%%); job/online = %.0f%%%n",
            round, online.busy() * 100, online.callsPerSecond(), online.callsPerSecond() * ms / 10 / nodes.size(),
            busyJob * 100, calls / jobSecs, jobSecs, calls / jobSecs * ms / 10 / nodes.size(),
            busyJob / online.busy() * 100);
      }
      System.out.printf(Locale.ROOT, "[jobs] bench: %d inputs of %.1f ms on %d nodes (1 worker each, per_node %d, %s,"
          + " %d rounds): workers busy %.1f%% under a saturating online load (8 clients per node), %.1f%% during the"
          + " job; job/online = %.0f%%%n", n, ms, nodes.size(), perNode, priority, rounds, onlineSum / rounds * 100,
          jobSum / rounds * 100, jobSum / onlineSum * 100);
    }
  }

  record Phase(double busy, double callsPerSecond) { }

  /** A saturating online load (8 closed-loop clients per node) for a window of {@code seconds} of samples. */
  static Phase saturate(JobCluster c, PoolClient client, List<String> nodes, float ms, int seconds) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong answered = new AtomicLong();
    List<CompletableFuture<Void>> loops = new ArrayList<>();
    for (String node : nodes) {
      for (int k = 0; k < 8; k++) {
        loops.add(CompletableFuture.runAsync(() -> {
          while (!stop.get()) {
            result(client.infer(RequestContext.within("", 30_000), DEPLOYMENT, "1", node, new InferenceRequest("sat",
                List.of(Tensor.ofFloats("input", new long[] {1, 4}, new float[] {ms, ms, ms, ms})), List.of(), Map.of())));
            answered.incrementAndGet();
          }
        }));
      }
    }
    // Warm-up: every client has had answers; then a window of seconds' worth of 10 ms samples (or more).
    await().atMost(Duration.ofSeconds(60)).until(() -> answered.get() >= 100L * loops.size());
    long a0 = answered.get();
    long t0 = System.nanoTime();
    Busy online = Busy.sample(c, nodes);
    await().atMost(Duration.ofSeconds(seconds * 10L + 60)).pollInterval(Duration.ofMillis(100))
        .until(() -> online.samples.get() >= seconds * 100L);
    double busy = online.stop();
    double rate = (answered.get() - a0) / ((System.nanoTime() - t0) / 1e9);
    stop.set(true);
    CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    return new Phase(busy, rate);
  }

  /** A JFR recording of Java samples every 1 ms (-Dkiln.bench.jfr=FILE: the last round's job phase). */
  static jdk.jfr.Recording startJfr() throws Exception {
    jdk.jfr.Recording rec = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"));
    rec.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(1));
    rec.start();
    return rec;
  }

  /** Samples the workers' busy fraction (busy / total, every node) every 10 ms on a thread of its own. */
  static final class Busy {
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicLong busy = new AtomicLong();
    private final AtomicLong total = new AtomicLong();
    final AtomicLong samples = new AtomicLong();
    private Thread thread;

    static Busy sample(JobCluster c, List<String> nodes) {
      Busy b = new Busy();
      PoolClient client = new PoolClient(c.pc.node(HEAD));
      b.thread = new Thread(() -> {
        while (!b.stop.get()) {
          for (String n : nodes) {
            PoolStats s = result(client.stats(DEPLOYMENT, "1", n));
            b.busy.addAndGet(s.busyWorkers());
            b.total.addAndGet(s.totalWorkers());
          }
          b.samples.incrementAndGet();
          java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L);
        }
      }, "busy-sampler");
      b.thread.start();
      return b;
    }

    double stop() throws InterruptedException {
      stop.set(true);
      thread.join();
      return total.get() == 0 ? 0 : (double) busy.get() / total.get();
    }
  }
}
