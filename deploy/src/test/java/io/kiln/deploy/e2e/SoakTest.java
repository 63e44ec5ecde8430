package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import io.kiln.pools.PoolStats;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The soak: three serving nodes, a mix of three models at about half of the capacity measured first, poison
 * requests that crash a worker every couple of seconds, and a rolling restart of one node at set intervals —
 * for {@code kiln.reliability.soak.seconds}: 36 in CI, in 4 s windows with one restart at 20 s (nine windows, the
 * restart in the sixth, as 45 s in 5 s windows had them), so that {@code ./run-tests} stays under 10 minutes
 * ({@code reliability/run.sh soak} runs 1800 s in 30 s windows with a restart every 600 s). After every window it
 * samples heap (after GC), RSS, threads and file descriptors; at the end it checks that nothing was lost, that no
 * queue slot, request or connection is left behind, that threads and descriptors do not climb window after window,
 * that heap and RSS are flat (slopes stated), and that p99 did not drift (deploy's pom gives the test JVMs a heap
 * floor, so that G1 handing heap back after each sample's collection does not read as RSS moving). The plots are in
 * {@code target/reliability/soak.html}.
 */
@Tag("slow")
class SoakTest {

  static final long SECONDS = Figures.knob("soak.seconds", 36);
  static final long WINDOW_SECONDS = Figures.knob("soak.windowSeconds", 4);
  static final long RESTART_EVERY_SECONDS = Figures.knob("soak.restartEverySeconds", 20);
  static final long POISON_EVERY_MS = Figures.knob("soak.poisonEveryMs", 2000);
  static final String RESTARTED = "s3";

  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model: {uri: "builtin:identity", engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 2]}],
                  outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}}
        - name: slow
          version: "1"
          model: {uri: "builtin:sleep", engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 2]}],
                  outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
        - name: fragile
          version: "1"
          model: {uri: "builtin:crash-on-nan", engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 2]}],
                  outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}, max_restarts: 1000000}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
      """;

  private static final String[] MODELS = {"echo", "slow", "fragile"};

  private static IntFunction<LoadDriver.Request> mix() {
    return i -> {
      String m = MODELS[Math.floorMod(i, MODELS.length)];
      return LoadDriver.row(m, m.equals("slow") ? 3 : i % 1000, -i);
    };
  }

  @Test
  void halfCapacityForMinutesWithCrashesAndARestartLeaksNothingAndLosesNothing() throws Exception {
    try (ServingCluster cluster = ServingCluster.start("s1", "s2", RESTARTED)) {
      cluster.deploy(YAML);
      for (String m : MODELS) {
        cluster.awaitReady(m, 3);
      }
      // Traffic enters through the nodes that stay; the restarted one's pools serve through their routers.
      List<Integer> ports = List.of(cluster.node("s1").httpPort(), cluster.node("s2").httpPort());
      LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
      driver.closed(ports, 8, Duration.ofSeconds(5), mix()); // warm-up
      double capacity = driver.closed(ports, 8, Duration.ofSeconds(5), mix()).throughput();
      double rate = Math.max(20, capacity / 2);

      CompletableFuture<LoadDriver.Outcome> poison = CompletableFuture.supplyAsync(() -> driver.open(ports,
          1000.0 / POISON_EVERY_MS, Duration.ofSeconds(SECONDS), i -> LoadDriver.row("fragile", Float.NaN, i)));
      List<SoakReport.Sample> samples = new ArrayList<>();
      long sent = 0;
      long ok = 0;
      long lost = 0;
      long failed = 0;
      List<String> lostReasons = new ArrayList<>();
      int restarts = 0;
      long start = System.nanoTime();
      CompletableFuture<Void> restart = CompletableFuture.completedFuture(null);
      while (elapsed(start) < SECONDS) {
        String event = null;
        if (elapsed(start) >= (restarts + 1) * RESTART_EVERY_SECONDS && restart.isDone()) {
          restart.get();
          restarts++;
          event = "rolling restart of " + RESTARTED;
          restart = CompletableFuture.runAsync(() -> cluster.restart(RESTARTED)); // under load
        }
        LoadDriver.Outcome w = driver.open(ports, rate, Duration.ofSeconds(WINDOW_SECONDS), mix());
        sent += w.sent();
        ok += w.ok();
        lost += w.lost();
        failed += w.clean();
        w.lostReasons().stream().limit(5 - Math.min(5, lostReasons.size())).forEach(lostReasons::add);
        samples.add(new SoakReport.Sample(elapsed(start), w.throughput(), w.okP99Millis(),
            Figures.heapAfterGc() / 1048576.0, Figures.rssBytes() / 1048576.0, threads(), fds(ports), loadSockets(ports),
            w.sent(),
            w.lost(), w.clean(), event));
      }
      restart.get(2, TimeUnit.MINUTES);
      LoadDriver.Outcome poisoned = poison.get(2, TimeUnit.MINUTES);

      // Nothing left behind: every pool empty, every gateway idle, every worker back.
      for (String m : MODELS) {
        cluster.awaitReady(m, 3);
      }
      await().atMost(ServingCluster.WAIT).until(() -> nothingOutstanding(cluster));
      SoakReport.Sample first = samples.get(0);
      SoakReport.Sample last = samples.get(samples.size() - 1);
      List<SoakReport.Sample> steady = samples.subList(1, samples.size());
      double heapSlope = SoakReport.slopePerMinute(steady, SoakReport.Sample::heapMiB);
      double rssSlope = SoakReport.slopePerMinute(steady, SoakReport.Sample::rssMiB);
      double p99Early = median(samples.subList(0, Math.max(1, samples.size() / 3)));
      double p99Late = median(samples.subList(samples.size() - Math.max(1, samples.size() / 3), samples.size()));

      String summary = String.format(java.util.Locale.ROOT, "%d s at %.0f req/s (capacity measured %.0f req/s), "
              + "%d windows of %d s, %d poison requests, %d rolling restart(s) of %s: sent %d, answered %d, failed "
              + "cleanly %d, lost %d; heap slope %.2f MiB/min, RSS slope %.2f MiB/min; threads %d -> %d, fds %d -> %d;"
              + " p99 early %.0f ms, late %.0f ms", SECONDS, rate, capacity, samples.size(), WINDOW_SECONDS,
          poisoned.sent(), restarts, RESTARTED, sent, ok, failed, lost, heapSlope, rssSlope, first.threads(),
          last.threads(), first.fds(), last.fds(), p99Early, p99Late);
      SoakReport.write(Path.of(System.getProperty("kiln.reliability.out", "target/reliability"), "soak.html"),
          "Kiln soak", samples, summary);
      new Figures("soak").put("seconds", SECONDS).put("ratePerSecond", Math.round(rate))
          .put("capacityPerSecond", Math.round(capacity)).put("sent", sent).put("succeeded", ok)
          .put("failedCleanly", failed).put("lost", lost).put("lostExamples", lostReasons)
          .put("poison", poisoned.figures()).put("restarts", restarts)
          .put("heapSlopeMiBPerMinute", round2(heapSlope)).put("rssSlopeMiBPerMinute", round2(rssSlope))
          .put("threads", List.of(first.threads(), last.threads())).put("fds", List.of(first.fds(), last.fds()))
          .put("loadSocketsMax", samples.stream().mapToInt(SoakReport.Sample::loadSockets).max().orElse(0))
          .put("p99EarlyMs", p99Early).put("p99LateMs", p99Late).write();

      assertThat(lost).as("lost: %s", lostReasons).isZero();
      assertThat(poisoned.lost()).as("poison lost: %s", poisoned.lostReasons()).isZero();
      assertThat(failed).as("normal requests failed cleanly").isLessThanOrEqualTo(sent / 100);
      assertThat(ok + failed).isEqualTo(sent);
      assertThat(restarts).isPositive();
      // Flat: a leak of ~125 bytes per request at these rates (1,100-1,230 a second) climbs 8 MiB a minute. Heap after a
      // full GC, with three nodes and the load in this JVM, also moves by a few MiB from one sample to the next (a
      // restart's new member, buffers grown on first use): CI read 52.4 -> 57.9 -> 55.5 MiB over 28 s once (9.6
      // MiB/min fitted) where the 30-minute run reads 0.03. So the fitted rise over the steady span is bounded by
      // 8 MiB a minute or 6 MiB, whichever is more: 13 MiB/min over CI's 28 s, 8 over 30 minutes; the per-request
      // leak of the reverted 32198b3 rose 11 MiB in these 36 s (17.9-22.2 MiB/min) and fails either.
      double steadyMinutes = (last.atSeconds() - steady.get(0).atSeconds()) / 60.0;
      assertThat(heapSlope).as("heap slope MiB/min over %.2f min", steadyMinutes)
          .isLessThan(Math.max(8, 6 / Math.max(steadyMinutes, 1e-9)));
      assertThat(rssSlope).as("RSS slope MiB/min").isLessThan(32);
      // A leak climbs window after window (each thousands of requests); a restart or a pool that grows once is a step.
      List<SoakReport.Sample> late = samples.subList(samples.size() / 2, samples.size());
      assertThat(climbingWindows(late, SoakReport.Sample::threads)).as("windows of the second half in which threads"
          + " rose: %s", samples.stream().map(SoakReport.Sample::threads).toList()).isLessThanOrEqualTo(late.size() / 2);
      assertThat(climbingWindows(late, SoakReport.Sample::fds)).as("windows of the second half in which file"
          + " descriptors rose: %s", samples.stream().map(SoakReport.Sample::fds).toList())
          .isLessThanOrEqualTo(late.size() / 2);
      assertThat(threads()).as("threads after the soak").isLessThanOrEqualTo(first.threads() + 100);
      assertThat(fds(ports)).as("file descriptors after the soak, less the load's connections")
          .isLessThanOrEqualTo(first.fds() + 256);
      assertThat(p99Late).as("p99 late vs early (ms)").isLessThanOrEqualTo(3 * p99Early + 250);
    }
  }

  private static boolean nothingOutstanding(ServingCluster cluster) {
    for (String node : cluster.nodeIds()) {
      if (cluster.node(node).gateway().requestsInFlight() != 0) {
        return false;
      }
      for (String m : MODELS) {
        PoolStats s = cluster.stats(m, "1", node);
        if (s.outstanding() != 0 || s.queueDepth() != 0) {
          return false;
        }
      }
    }
    return true;
  }

  /** How many consecutive windows saw {@code f} rise by more than a little (connection churn moves fds by a few). */
  private static int climbingWindows(List<SoakReport.Sample> s, java.util.function.ToIntFunction<SoakReport.Sample> f) {
    int n = 0;
    for (int i = 1; i < s.size(); i++) {
      n += f.applyAsInt(s.get(i)) > f.applyAsInt(s.get(i - 1)) + 4 ? 1 : 0;
    }
    return n;
  }

  private static double median(List<SoakReport.Sample> s) {
    double[] v = s.stream().mapToDouble(SoakReport.Sample::p99Millis).sorted().toArray();
    return v[v.length / 2];
  }

  private static double round2(double v) {
    return Math.round(v * 100) / 100.0;
  }

  private static long elapsed(long start) {
    return TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
  }

  private static int threads() {
    return ManagementFactory.getThreadMXBean().getThreadCount();
  }

  /** This process's open descriptors less {@link #loadSockets the load driver's connections}. */
  private static int fds(List<Integer> ports) {
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      return (int) s.count() - loadSockets(ports);
    } catch (IOException e) {
      return -1;
    }
  }

  /**
   * Established TCP sockets with a gateway port at either end: the driver's connections and their accepted
   * ends, both in this process (nothing else connects to these ports). A socket the server failed to close after
   * its client left is not established (CLOSE_WAIT) and so still counts as the nodes'.
   */
  static int loadSockets(List<Integer> ports) {
    int n = 0;
    for (String table : List.of("/proc/self/net/tcp", "/proc/self/net/tcp6")) {
      try (Stream<String> lines = Files.lines(Path.of(table))) {
        n += (int) lines.skip(1).map(String::trim).map(l -> l.split("\\s+"))
            .filter(f -> f.length > 3 && f[3].equals("01"))
            .filter(f -> ports.contains(port(f[1])) || ports.contains(port(f[2]))).count();
      } catch (IOException | RuntimeException e) {
        // no such table (no IPv6): nothing of the load's there
      }
    }
    return n;
  }

  private static int port(String hexAddress) {
    return Integer.parseInt(hexAddress.substring(hexAddress.lastIndexOf(':') + 1), 16);
  }
}
