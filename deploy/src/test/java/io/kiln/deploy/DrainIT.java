package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.RunStamp;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A graceful drain under load, with real processes ({@code kiln start --foreground}, as {@link NodeLossIT}): a
 * head and two labelled nodes {@code n1}, {@code n2} whose pools serve an identity deployment, steady
 * closed-loop traffic through the gateways of the head (no pool of its own: it routes to both pools, so
 * {@code n1}'s pool serves routed traffic) and {@code n2}; then SIGTERM to {@code n1} while it flows. Every
 * request must succeed (200 with its own data: a drain fails nothing), {@code n1}'s readiness must read 503
 * "draining" while it drains, it must exit 0 within its grace, {@code status} must show it gone, and the traffic
 * must go on afterwards.
 */
class DrainIT {

  static final Duration START = Duration.ofSeconds(180);
  static final Duration DEADLINE = Duration.ofSeconds(10);
  static final Duration SLACK = Duration.ofSeconds(5);
  static final int GRACE_SECONDS = 20;
  /** Answers each serving gateway gives before the drain, and again after it. */
  static final long PHASE_REQUESTS = Long.getLong("kiln.reliability.drain.requests", 300);
  static final int CLIENTS_PER_GATEWAY = 2;
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final ObjectMapper JSON = new ObjectMapper();

  CliProcesses cli;
  final Map<String, Integer> ports = new ConcurrentHashMap<>();
  final Map<String, KilnProcess> processes = new ConcurrentHashMap<>();
  List<String> common;

  /** Outcomes of the traffic through one gateway. */
  static final class Tally {
    final AtomicLong sent = new AtomicLong();
    final AtomicLong ok = new AtomicLong();
    final Map<String, AtomicLong> ranOn = new ConcurrentHashMap<>();
    final java.util.concurrent.ConcurrentLinkedQueue<String> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
    final AtomicLong failed = new AtomicLong();
    /** Of the failed: a 503 with Retry-After or a 504, each with a JSON error (counted, though none may fail). */
    final AtomicLong failedCleanly = new AtomicLong();
    /** Of the failed: anything else (no answer, a transport error, another status, a wrong answer). */
    final AtomicLong lost = new AtomicLong();

    Map<String, Object> figures() {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("sent", sent.get());
      f.put("succeeded", ok.get());
      f.put("failed", failed.get());
      f.put("failedCleanly", failedCleanly.get());
      f.put("lost", lost.get());
      Map<String, Long> r = new java.util.TreeMap<>();
      ranOn.forEach((k, v) -> r.put(k, v.get()));
      f.put("ranOn", r);
      if (!failures.isEmpty()) {
        f.put("failureExamples", List.copyOf(failures));
      }
      return f;
    }

    long on(String node) {
      AtomicLong n = ranOn.get(node);
      return n == null ? 0 : n.get();
    }
  }

  private void start(String id, List<String> first, List<String> more) throws Exception {
    List<String> args = new ArrayList<>(first);
    args.addAll(List.of("--foreground", "--node-id", id));
    args.addAll(common);
    args.addAll(more);
    String name = id + "-" + processes.size();
    processes.put(id, cli.startNode(name, args.toArray(String[]::new)));
  }

  private JsonNode awaitEntry(String id) {
    JsonNode e = cli.awaitEntry(id, processes.get(id), START, true);
    ports.put(id, e.path("httpPort").asInt());
    return e;
  }

  JsonNode status() throws Exception {
    return JSON.readTree(NodeLossIT.call(ports.get("head"), "GET", "/api/v1/status", TOKEN, null).body());
  }

  @Test
  void sigtermDrainsANodeUnderLoadWithoutFailingARequest() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "drain-" + UUID.randomUUID().toString().substring(0, 8)));
    ExecutorService clients = Executors.newCachedThreadPool();
    try {
      common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
          "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--token", TOKEN,
          "--request-timeout-ms", Long.toString(DEADLINE.toMillis()), "--warmup-seconds", "0",
          "--drain-grace", Integer.toString(GRACE_SECONDS));
      start("head", List.of("start", "--head"), List.of());
      String join = "127.0.0.1:" + awaitEntry("head").path("clusterPort").asInt();
      List<String> joinArgs = List.of("start", "--address", join);
      start("n1", joinArgs, List.of("--labels", "zone=x"));
      start("n2", joinArgs, List.of("--labels", "zone=x"));
      awaitEntry("n1");
      awaitEntry("n2");
      HttpResponse<String> applied = NodeLossIT.call(ports.get("head"), "POST", "/api/v1/deployments", TOKEN,
          NodeLossIT.YAML);
      assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
      await().atMost(START).pollInterval(Duration.ofMillis(250))
          .until(() -> poolReady(status(), "n1") && poolReady(status(), "n2"));
      for (String g : List.of("head", "n1", "n2")) {
        await().atMost(Duration.ofSeconds(60)).until(() ->
            NodeLossIT.call(ports.get(g), "GET", "/v2/models/echo/ready", null, null).statusCode() == 200);
      }

      Map<String, Tally> tallies = new LinkedHashMap<>();
      AtomicBoolean stop = new AtomicBoolean();
      List<Future<?>> loops = new ArrayList<>();
      for (String g : List.of("head", "n2")) {
        Tally t = new Tally();
        tallies.put(g, t);
        for (int c = 0; c < CLIENTS_PER_GATEWAY; c++) {
          loops.add(clients.submit(() -> traffic(g, t, stop)));
        }
      }
      Tally head = tallies.get("head");
      await().atMost(Duration.ofMinutes(5)).until(() -> head.on("n1") >= PHASE_REQUESTS / 3 && head.on("n2") > 0
          && head.ok.get() >= PHASE_REQUESTS && tallies.get("n2").ok.get() >= PHASE_REQUESTS);
      long onN1Before = head.on("n1");

      // n1's readiness, polled from before the signal until its gateway is gone.
      int n1 = ports.get("n1");
      AtomicBoolean saw503 = new AtomicBoolean();
      AtomicLong readyPolls = new AtomicLong();
      Future<?> readiness = clients.submit(() -> {
        while (processes.get("n1").isAlive()) {
          try {
            HttpResponse<String> r = NodeLossIT.call(n1, "GET", "/v2/health/ready", null, null);
            readyPolls.incrementAndGet();
            if (r.statusCode() == 503 && r.body().contains("draining")) {
              saw503.set(true);
            }
          } catch (Exception e) {
            return; // the gateway closed
          }
        }
      });

      long termAt = System.nanoTime();
      Process n1Process = processes.get("n1").process();
      n1Process.destroy(); // SIGTERM
      assertThat(n1Process.waitFor(GRACE_SECONDS + 30, TimeUnit.SECONDS)).as("n1 exits").isTrue();
      long exitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - termAt);
      int exitCode = n1Process.exitValue();
      long onN1AtExit = head.on("n1");
      readiness.get(30, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> gone(status(), "n1"));
      long goneMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - termAt);

      long[] after = {head.ok.get(), tallies.get("n2").ok.get()};
      await().atMost(Duration.ofMinutes(5)).until(() -> head.ok.get() >= after[0] + PHASE_REQUESTS
          && tallies.get("n2").ok.get() >= after[1] + PHASE_REQUESTS);
      stop.set(true);
      for (Future<?> f : loops) {
        f.get(2, TimeUnit.MINUTES);
      }

      String log = processes.get("n1").log();
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("scenario", "drain");
      f.putAll(RunStamp.fields());
      f.put("graceSeconds", GRACE_SECONDS);
      f.put("exitCode", exitCode);
      f.put("exitedAfterSigtermMs", exitedMs);
      f.put("goneFromStatusMs", goneMs);
      f.put("readinessPolls", readyPolls.get());
      f.put("readiness503Seen", saw503.get());
      f.put("headRanOnN1BeforeSigterm", onN1Before);
      f.put("headRanOnN1DuringDrain", onN1AtExit - onN1Before);
      Map<String, Object> by = new LinkedHashMap<>();
      tallies.forEach((k, v) -> by.put(k, v.figures()));
      f.put("byGateway", by);
      Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
      Files.createDirectories(out);
      Files.writeString(out.resolve("drain.json"), new ObjectMapper().writerWithDefaultPrettyPrinter()
          .writeValueAsString(f));
      System.out.println("RELIABILITY drain " + new ObjectMapper().writeValueAsString(f));

      for (Map.Entry<String, Tally> e : tallies.entrySet()) {
        assertThat(e.getValue().failed.get()).as("failed through %s: %s", e.getKey(), e.getValue().failures).isZero();
      }
      assertThat(onN1Before).as("n1's pool served routed traffic before the drain").isPositive();
      assertThat(exitCode).as("n1's exit code; its output:\n%s", log).isZero();
      assertThat(exitedMs).as("n1 exits within its grace plus leaving").isLessThan((GRACE_SECONDS + 20) * 1000L);
      assertThat(saw503).as("n1 read not ready while it drained (%d polls)", readyPolls.get()).isTrue();
      assertThat(log).contains("draining:").containsPattern("drained in \\d+\\.\\d s");
    } finally {
      clients.shutdownNow();
      cli.close();
    }
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

  /** Whether {@code node} is neither a live member nor listed with a pool. */
  static boolean gone(JsonNode status, String node) {
    for (JsonNode n : status.path("nodes")) {
      if (n.path("id").asText().equals(node) && n.path("alive").asBoolean()) {
        return false;
      }
    }
    for (JsonNode d : status.path("deployments")) {
      for (JsonNode p : d.path("pools")) {
        if (p.path("node").asText().equals(node)) {
          return false;
        }
      }
    }
    return true;
  }

  /** One closed-loop client through gateway {@code g}: anything but a 200 with its own data is a failure. */
  private void traffic(String g, Tally t, AtomicBoolean stop) {
    int i = 0;
    while (!stop.get()) {
      float v = ++i + Math.abs(Thread.currentThread().getId() % 1000) * 1000f;
      String data = "[" + v + "," + (-v) + "]";
      String body = OipRequest.fp32("x", new long[] {1, 2}, v, -v).json();
      HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(g) + "/v2/models/echo/infer"))
          .timeout(DEADLINE.plus(SLACK)).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build();
      t.sent.incrementAndGet();
      try {
        HttpResponse<String> r = NodeLossIT.HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200 && r.body().replace(" ", "").contains("\"data\":" + data)) {
          t.ok.incrementAndGet();
          String node = JSON.readTree(r.body()).path("parameters").path("kiln_node").asText("?");
          t.ranOn.computeIfAbsent(node, k -> new AtomicLong()).incrementAndGet();
        } else {
          boolean clean = (r.statusCode() == 503 && r.headers().firstValue("Retry-After").isPresent()
              || r.statusCode() == 504) && r.body().contains("\"error\"");
          (clean ? t.failedCleanly : t.lost).incrementAndGet();
          failed(t, r.statusCode() + " " + r.body());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception e) {
        t.lost.incrementAndGet();
        failed(t, e.toString());
      }
    }
  }

  private static void failed(Tally t, String why) {
    t.failed.incrementAndGet();
    if (t.failures.size() < 10) {
      t.failures.add(why);
    }
  }
}
