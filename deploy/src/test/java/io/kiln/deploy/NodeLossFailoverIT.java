package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.RunStamp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Failover latency of unpinned requests when a node is SIGKILLed on loopback (issue #37): three {@code kiln start}
 * processes (the head, and {@code n2}, {@code n3} hosting the pools of a {@code builtin:sleep} model, so that requests
 * are in flight when a node dies), open-loop traffic through the head's and
 * {@code n2}'s gateways, each sending unpinned requests and requests pinned to {@code n3} ({@code kiln-node: n3}),
 * then SIGKILL of {@code n3}. The head has no pool, so its unpinned requests are spread over {@code n2} and
 * {@code n3}: some are in flight to {@code n3} when it dies.
 *
 * <p>Asserted: nothing lost (every unpinned request answered 200 with its own values; every pinned one 200, or 503
 * with {@code Retry-After} and a JSON error, or 504); no unpinned request fails, the ones in flight to the dead node
 * included (they are re-sent to {@code n2}); and the failover window's slowest unpinned request (from the kill until
 * one second after {@code status} shows {@code n3} dead, plus those in flight at the kill) is answered within 1 s,
 * or, on a machine so loaded that an unpinned request took longer than that with no fault at all in the seconds
 * before the kill, within 1 s more than that slowest request before the kill (the machine's delay, not the
 * failover's; the figures say which bound applied). Figures (window p50/p99/max, detection as logged by the
 * surviving nodes, membership) go to {@code node-loss-failover.json}.
 *
 * <p>Sizes: {@code kiln.reliability.failover.unpinnedPerSecond} and {@code .pinnedPerSecond} per gateway (CI 60 and
 * 10; the 360 and 40 with {@code reliability/run.sh failover}), {@code .seconds} of traffic before the kill
 * and again after the detection (CI 8). {@code kiln.reliability.failover.distribution} runs the nodes from a built
 * {@code kiln.jar} instead of the test class path (to measure another build the same way).
 */
class NodeLossFailoverIT {

  static final Duration START = Duration.ofSeconds(180);
  static final Duration DEADLINE = Duration.ofSeconds(5);
  static final Duration SLACK = Duration.ofSeconds(5);
  /** The target: the slowest unpinned request of the failover window. */
  static final long TARGET_MAX_MS = 1000;
  static final double UNPINNED = Double.parseDouble(System.getProperty("kiln.reliability.failover.unpinnedPerSecond",
      "60"));
  static final double PINNED = Double.parseDouble(System.getProperty("kiln.reliability.failover.pinnedPerSecond", "10"));
  static final long PHASE_SECONDS = Long.getLong("kiln.reliability.failover.seconds", 8);
  /** How long each batch holds its worker ({@code builtin:sleep}): requests are in flight when the node dies. */
  static final long SERVICE_MS = Long.getLong("kiln.reliability.failover.serviceMs", 50);
  static final String DISTRIBUTION = System.getProperty("kiln.reliability.failover.distribution", "");
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  /** {@code builtin:sleep}: the identity after holding its worker for the largest element of {@code x}, in ms. */
  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model:
            uri: builtin:sleep
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 2, worker_resources: {CPU: 0.5}, node_selector: {zone: x}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 1}
          queue: {max_queued: 256, timeout_ms: 5000}
      """;

  CliProcesses cli;
  final Map<String, KilnProcess> processes = new LinkedHashMap<>();
  final Map<String, Integer> ports = new LinkedHashMap<>();

  @AfterEach
  void stop() throws Exception {
    processes.values().forEach(KilnProcess::close);
    if (cli != null) {
      cli.close();
    }
  }

  @Test
  void unpinnedRequestsInFlightToAKilledNodeAreServedElsewhereWithinASecond() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "failover-" + UUID.randomUUID().toString().substring(0, 8)));
    List<String> common = List.of("--foreground", "--host", "127.0.0.1", "--port", "0", "--grpc-port", "0",
        "--cluster-port", "0", "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--token", TOKEN,
        "--request-timeout-ms", Long.toString(DEADLINE.toMillis()), "--warmup-seconds", "1");
    start("head", List.of("start", "--head"), common, List.of());
    String join = "127.0.0.1:" + awaitEntry("head").path("clusterPort").asInt();
    start("n2", List.of("start", "--address", join), common, List.of("--labels", "zone=x"));
    start("n3", List.of("start", "--address", join), common, List.of("--labels", "zone=x"));
    awaitEntry("n2");
    awaitEntry("n3");
    int head = ports.get("head");
    HttpResponse<String> applied = call(head, "POST", "/api/v1/deployments", YAML);
    assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
    await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
      JsonNode s = status(head);
      return poolReady(s, "n2") && poolReady(s, "n3");
    });
    for (String g : List.of("head", "n2", "n3")) {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .until(() -> call(ports.get(g), "GET", "/v2/health/ready", null).statusCode() == 200);
    }

    OpenLoop load = new OpenLoop(List.of(ports.get("head"), ports.get("n2")), UNPINNED, PINNED, "n3");
    try {
      load.start();
      long perStream = (long) (PHASE_SECONDS * Math.min(UNPINNED, PINNED));
      await().atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(100))
          .until(() -> load.answeredPerStreamAtLeast(perStream));
      // Steady state before the kill: the head's unpinned requests reached both pools.
      assertThat(load.servedBy("n3")).as("unpinned requests through the head served by n3 before the kill").isPositive();

      long killNanos = System.nanoTime();
      LocalTime killClock = LocalTime.now();
      processes.get("n3").kill(); // SIGKILL
      assertThat(processes.get("n3").isAlive()).isFalse();
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> !alive(status(head), "n3"));
      long deadSeenNanos = System.nanoTime();
      Map<String, Long> atDetection = load.answeredPerStream();
      await().atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(100))
          .until(() -> load.answeredPerStreamSince(atDetection, perStream));
      load.stopSending();
      await().atMost(DEADLINE.plus(SLACK).plus(Duration.ofSeconds(10))).pollInterval(Duration.ofMillis(100))
          .until(load::drained);

      Figures f = new Figures(load.records(), killNanos, deadSeenNanos);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("scenario", "node-loss-failover");
      out.putAll(RunStamp.fields());
      out.put("nodes", 3);
      out.put("gateways", 2);
      out.put("unpinnedPerSecondPerGateway", UNPINNED);
      out.put("pinnedPerSecondPerGateway", PINNED);
      out.put("pinnedTo", "n3");
      out.put("secondsPerPhase", PHASE_SECONDS);
      out.put("model", "builtin:sleep " + SERVICE_MS + " ms, 2 workers per node, batches of up to 8");
      out.put("deadlineMs", DEADLINE.toMillis());
      out.put("distribution", DISTRIBUTION.isEmpty() ? "test class path" : DISTRIBUTION);
      out.putAll(f.counts());
      out.put("unpinned", f.unpinned());
      out.put("pinned", f.pinned());
      out.put("beforeKill", f.beforeKill());
      Map<String, Object> window = f.window();
      out.put("failoverWindow", window);
      out.put("afterWindow", f.afterWindow());
      out.put("deadInStatusMs", TimeUnit.NANOSECONDS.toMillis(deadSeenNanos - killNanos));
      out.put("unreachableLoggedMs", logged("head", "Reachability - node n3 is unreachable", killClock));
      out.put("unreachableLoggedOnN2Ms", logged("n2", "Reachability - node n3 is unreachable", killClock));
      out.put("leftClusterLoggedMs", logged("head", "RuntimeImpl - node n3 left the cluster", killClock));
      long preKillMax = ((Number) f.beforeKill().get("maxMs")).longValue();
      long bound = preKillMax > TARGET_MAX_MS ? preKillMax + TARGET_MAX_MS : TARGET_MAX_MS;
      out.put("maxBoundMs", bound);
      out.put("maxBoundWhy", bound == TARGET_MAX_MS ? "the issue's target"
          : "1 s over the slowest unpinned request before the kill (" + preKillMax + " ms: the machine's own delay)");
      Path dir = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
      Files.createDirectories(dir);
      String json = JSON.writerWithDefaultPrettyPrinter().writeValueAsString(out);
      Files.writeString(dir.resolve("node-loss-failover.json"), json);
      System.out.println("RELIABILITY node-loss-failover " + JSON.writeValueAsString(out));

      assertThat(f.lost()).as("lost: %s", f.lostExamples()).isZero();
      assertThat(f.unpinnedNotOk()).as("unpinned requests not answered 200: %s", f.unpinnedFailures()).isZero();
      assertThat((int) window.get("inFlightAtKill")).as("the kill caught unpinned requests in flight").isPositive();
      assertThat(((Number) window.get("maxMs")).longValue()).as("slowest unpinned request of the failover window: %s",
          window).isLessThanOrEqualTo(bound);
    } finally {
      load.close();
    }
  }

  // ---- the cluster ------------------------------------------------------------------------------------------------

  private void start(String id, List<String> role, List<String> common, List<String> more) {
    List<String> args = new ArrayList<>(role);
    args.addAll(List.of("--node-id", id));
    args.addAll(common);
    args.addAll(more);
    KilnProcess.Builder b = DISTRIBUTION.isEmpty() ? KilnProcess.java(KilnCli.class.getName())
        : KilnProcess.jar(Path.of(DISTRIBUTION));
    processes.put(id, b.jvmFlags("-Dkiln.home=" + cli.home()).args(args.toArray(String[]::new)).name(id)
        .directory(cli.home()).log(cli.home().resolve(id + ".out")).start());
  }

  private JsonNode awaitEntry(String id) {
    JsonNode e = cli.awaitEntry(id, processes.get(id), START, true);
    ports.put(id, e.path("httpPort").asInt());
    return e;
  }

  static HttpResponse<String> call(int port, String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + TOKEN)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode status(int port) throws Exception {
    return JSON.readTree(call(port, "GET", "/api/v1/status", null).body());
  }

  static boolean alive(JsonNode status, String node) {
    for (JsonNode n : status.path("nodes")) {
      if (n.path("id").asText().equals(node)) {
        return n.path("alive").asBoolean();
      }
    }
    return false;
  }

  static boolean poolReady(JsonNode status, String node) {
    for (JsonNode d : status.path("deployments")) {
      if (d.path("name").asText().equals("echo")) {
        for (JsonNode p : d.path("pools")) {
          if (p.path("node").asText().equals(node)) {
            return p.path("ready").asBoolean();
          }
        }
      }
    }
    return false;
  }

  private static final Pattern LOG_TIME = Pattern.compile("^(\\d\\d:\\d\\d:\\d\\d\\.\\d\\d\\d) ");

  /** Milliseconds from {@code since} to the first line of {@code node}'s log containing {@code text}; -1 if none. */
  private long logged(String node, String text, LocalTime since) {
    for (String line : processes.get(node).log().split("\n")) {
      Matcher m = LOG_TIME.matcher(line);
      if (line.contains(text) && m.find()) {
        LocalTime t = LocalTime.parse(m.group(1));
        if (!t.isBefore(since.minusSeconds(1))) {
          return Duration.between(since, t).toMillis();
        }
      }
    }
    return -1;
  }

  // ---- the load ---------------------------------------------------------------------------------------------------

  /** One request's fate. Times on the nano clock; latency from when it was due (open loop). */
  record Rec(int gateway, boolean pinned, long dueNanos, long endNanos, int status, String node, String outcome,
             String why) {
    long millis() {
      return TimeUnit.NANOSECONDS.toMillis(endNanos - dueNanos);
    }
  }

  /**
   * Open-loop traffic: per gateway, {@code unpinned} and {@code pinned} requests a second, each on its own schedule;
   * a request is timed from when it was due, so a stalled send is not hidden. Outcomes: ok (200 with its own values),
   * clean (503 with Retry-After and a JSON error, or 504 with a JSON error: pinned requests only count it clean),
   * lost (anything else, or no answer within the deadline plus slack).
   */
  static final class OpenLoop implements AutoCloseable {
    private final List<Integer> gateways;
    private final double unpinned;
    private final double pinned;
    private final String pinTo;
    private final ScheduledExecutorService ticks = Executors.newScheduledThreadPool(1);
    private final ExecutorService callbacks = Executors.newFixedThreadPool(4);
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(callbacks)
        .connectTimeout(Duration.ofSeconds(5)).build();
    private final ConcurrentLinkedQueue<Rec> done = new ConcurrentLinkedQueue<>();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong answered = new AtomicLong();
    private final Map<String, AtomicLong> answeredByStream = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<String, AtomicLong> servedBy = new java.util.concurrent.ConcurrentHashMap<>();
    private final AtomicLong sequence = new AtomicLong();
    private volatile boolean sending = true;

    OpenLoop(List<Integer> gateways, double unpinned, double pinned, String pinTo) {
      this.gateways = gateways;
      this.unpinned = unpinned;
      this.pinned = pinned;
      this.pinTo = pinTo;
    }

    void start() {
      long t0 = System.nanoTime();
      for (int port : gateways) {
        for (boolean pin : new boolean[] {false, true}) {
          double rate = pin ? pinned : unpinned;
          if (rate <= 0) {
            continue;
          }
          long period = (long) (1e9 / rate);
          AtomicLong k = new AtomicLong();
          answeredByStream.put(port + "/" + pin, new AtomicLong());
          // A late tick runs its missed sends back to back; each is timed from when it was due.
          ticks.scheduleAtFixedRate(() -> {
            if (sending) {
              send(port, pin, t0 + k.getAndIncrement() * period);
            }
          }, 0, period, TimeUnit.NANOSECONDS);
        }
      }
    }

    private void send(int port, boolean pin, long due) {
      // [service ms, -id]: the sleep is the larger element, the id makes the answer this request's own.
      float v = SERVICE_MS;
      float w = -(float) (sequence.incrementAndGet() % 1_000_000);
      String data = "[" + v + "," + w + "]";
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/models/echo/infer"))
          .timeout(DEADLINE.plus(SLACK)).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(OipRequest.fp32("x", new long[] {1, 2}, v, w).json()));
      if (pin) {
        b.header("kiln-node", pinTo);
      }
      sent.incrementAndGet();
      http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString()).whenComplete((r, e) -> {
        long end = System.nanoTime();
        Rec rec;
        if (r == null) {
          rec = new Rec(port, pin, due, end, -1, null, "lost", String.valueOf(e));
        } else {
          String body = r.body();
          String node = null;
          String outcome;
          String why = null;
          if (TimeUnit.NANOSECONDS.toMillis(end - due) > DEADLINE.plus(SLACK).toMillis()) {
            outcome = "lost";
            why = "answered " + r.statusCode() + " after " + TimeUnit.NANOSECONDS.toMillis(end - due) + " ms";
          } else if (r.statusCode() == 200 && body.replace(" ", "").contains("\"data\":" + data)) {
            outcome = "ok";
            Matcher m = Pattern.compile("\"kiln_node\"\\s*:\\s*\"([^\"]+)\"").matcher(body);
            node = m.find() ? m.group(1) : "?";
          } else if ((r.statusCode() == 503 && r.headers().firstValue("Retry-After").isPresent()
              || r.statusCode() == 504) && body.contains("\"error\"")) {
            outcome = "clean";
            why = r.statusCode() + " " + body.substring(0, Math.min(240, body.length()));
          } else {
            outcome = "lost";
            why = r.statusCode() + " " + body.substring(0, Math.min(240, body.length()));
          }
          rec = new Rec(port, pin, due, end, r.statusCode(), node, outcome, why);
        }
        done.add(rec);
        if (rec.node() != null && !pin && port == gateways.get(0)) {
          servedBy.computeIfAbsent(rec.node(), n -> new AtomicLong()).incrementAndGet();
        }
        answeredByStream.get(port + "/" + pin).incrementAndGet();
        answered.incrementAndGet();
      });
    }

    boolean answeredPerStreamAtLeast(long n) {
      return answeredByStream.values().stream().allMatch(a -> a.get() >= n);
    }

    Map<String, Long> answeredPerStream() {
      Map<String, Long> m = new LinkedHashMap<>();
      answeredByStream.forEach((k, v) -> m.put(k, v.get()));
      return m;
    }

    /** Whether every stream answered at least {@code n} more requests than in {@code before}. */
    boolean answeredPerStreamSince(Map<String, Long> before, long n) {
      return answeredByStream.entrySet().stream().allMatch(e -> e.getValue().get() >= before.get(e.getKey()) + n);
    }

    /** Unpinned requests through the first gateway answered by {@code node}. */
    long servedBy(String node) {
      AtomicLong a = servedBy.get(node);
      return a == null ? 0 : a.get();
    }

    void stopSending() {
      sending = false;
      ticks.shutdownNow();
    }

    boolean drained() {
      return answered.get() == sent.get();
    }

    List<Rec> records() {
      return List.copyOf(done);
    }

    @Override
    public void close() {
      stopSending();
      callbacks.shutdownNow();
    }
  }

  // ---- the figures ------------------------------------------------------------------------------------------------

  /** What the records say about the kill. */
  static final class Figures {
    private final List<Rec> all;
    private final long kill;
    private final long windowEnd;

    Figures(List<Rec> all, long killNanos, long deadSeenNanos) {
      this.all = all;
      this.kill = killNanos;
      this.windowEnd = deadSeenNanos + TimeUnit.SECONDS.toNanos(1);
    }

    Map<String, Object> counts() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("sent", all.size());
      m.put("succeeded", all.stream().filter(r -> r.outcome().equals("ok")).count());
      m.put("failedCleanly", all.stream().filter(r -> r.outcome().equals("clean")).count());
      m.put("lost", lost());
      return m;
    }

    long lost() {
      return all.stream().filter(r -> r.outcome().equals("lost")).count();
    }

    List<String> lostExamples() {
      return all.stream().filter(r -> r.outcome().equals("lost")).map(Rec::why).distinct().limit(10).toList();
    }

    long unpinnedNotOk() {
      return all.stream().filter(r -> !r.pinned() && !r.outcome().equals("ok")).count();
    }

    List<String> unpinnedFailures() {
      return all.stream().filter(r -> !r.pinned() && !r.outcome().equals("ok")).map(Rec::why).distinct().limit(10)
          .toList();
    }

    Map<String, Object> unpinned() {
      return kind(all.stream().filter(r -> !r.pinned()).toList());
    }

    Map<String, Object> pinned() {
      return kind(all.stream().filter(Rec::pinned).toList());
    }

    /** Unpinned requests answered before the kill: the machine's latency with no fault. */
    Map<String, Object> beforeKill() {
      return latency(all.stream().filter(r -> !r.pinned() && r.endNanos() < kill).toList());
    }

    /**
     * Unpinned requests in flight at the kill, and those due from the kill until one second after status showed the
     * node dead.
     */
    Map<String, Object> window() {
      List<Rec> w = all.stream().filter(r -> !r.pinned() && r.endNanos() >= kill && r.dueNanos() <= windowEnd).toList();
      Map<String, Object> m = latency(w);
      List<Rec> inFlight = w.stream().filter(r -> r.dueNanos() < kill).toList();
      m.put("inFlightAtKill", inFlight.size());
      m.put("inFlightAtKillMaxMs", inFlight.stream().mapToLong(Rec::millis).max().orElse(0));
      return m;
    }

    /** Unpinned requests due after the window. */
    Map<String, Object> afterWindow() {
      return latency(all.stream().filter(r -> !r.pinned() && r.dueNanos() > windowEnd).toList());
    }

    private static Map<String, Object> kind(List<Rec> recs) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("sent", recs.size());
      m.put("succeeded", recs.stream().filter(r -> r.outcome().equals("ok")).count());
      m.put("failedCleanly", recs.stream().filter(r -> r.outcome().equals("clean")).count());
      m.put("lost", recs.stream().filter(r -> r.outcome().equals("lost")).count());
      Map<String, Long> byNode = new TreeMap<>();
      recs.stream().filter(r -> r.node() != null).forEach(r -> byNode.merge(r.node(), 1L, Long::sum));
      m.put("servedBy", byNode);
      Map<String, Long> reasons = new TreeMap<>();
      recs.stream().filter(r -> r.why() != null).forEach(r -> reasons.merge(r.why().replaceAll("[0-9]+", "N"), 1L,
          Long::sum));
      m.put("failuresByReason", reasons);
      return m;
    }

    private static Map<String, Object> latency(List<Rec> recs) {
      long[] ms = recs.stream().mapToLong(Rec::millis).sorted().toArray();
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("count", ms.length);
      m.put("p50Ms", percentile(ms, 0.50));
      m.put("p99Ms", percentile(ms, 0.99));
      m.put("maxMs", ms.length == 0 ? 0 : ms[ms.length - 1]);
      return m;
    }

    private static long percentile(long[] sorted, double q) {
      if (sorted.length == 0) {
        return 0;
      }
      int i = (int) Math.ceil(q * sorted.length) - 1;
      return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }
  }
}
