package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.RunStamp;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Node loss under load, with real processes ({@code kiln start --foreground}, a management token, a unique
 * cluster name, every port 0): a head and two labelled nodes {@code n1}, {@code n2} whose pools serve an
 * identity deployment; steady closed-loop traffic through all three gateways (the head's requests go to
 * either pool); then SIGKILL of {@code n1}. Every request through a surviving gateway must succeed or fail
 * cleanly (503 with {@code Retry-After}, or 504) within its deadline plus slack: none lost. Figures: time until
 * {@code status} shows {@code n1} dead, until the survivors stop routing to it, and, after {@code n1} restarts
 * with the same id, until its pool is READY and serving again. Management calls without the token get 401.
 */
class NodeLossIT {

  static final Duration START = Duration.ofSeconds(180);
  static final Duration DEADLINE = Duration.ofSeconds(5);
  static final Duration SLACK = Duration.ofSeconds(5);
  /** Answers each serving gateway gives before the kill, and again after the detection. */
  static final long PHASE_REQUESTS = Long.getLong("kiln.reliability.nodeloss.requests", 300);
  static final int CLIENTS_PER_GATEWAY = 2;
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, node_selector: {zone: x}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 1}
          queue: {max_queued: 256, timeout_ms: 5000}
      """;

  /** Outcomes of the traffic through one gateway. */
  static final class Tally {
    final AtomicLong sent = new AtomicLong();
    final AtomicLong ok = new AtomicLong();
    final AtomicLong clean = new AtomicLong();
    final AtomicLong lost = new AtomicLong();
    final AtomicLong refusedConnection = new AtomicLong();
    final Map<Integer, AtomicLong> codes = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<String> lostExamples = new ConcurrentLinkedQueue<>();
    final Map<String, AtomicLong> ranOn = new ConcurrentHashMap<>();
    volatile long lastFailureNanos;
    volatile long lastOnN1Nanos;

    Map<String, Object> figures() {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("sent", sent.get());
      f.put("succeeded", ok.get());
      f.put("failedCleanly", clean.get());
      f.put("lost", lost.get());
      f.put("connectionRefusedOrReset", refusedConnection.get());
      Map<String, Long> c = new java.util.TreeMap<>();
      codes.forEach((k, v) -> c.put(k.toString(), v.get()));
      f.put("byStatus", c);
      Map<String, Long> r = new java.util.TreeMap<>();
      ranOn.forEach((k, v) -> r.put(k, v.get()));
      f.put("ranOn", r);
      if (!lostExamples.isEmpty()) {
        f.put("lostExamples", List.copyOf(lostExamples));
      }
      return f;
    }
  }

  CliProcesses cli;
  final Map<String, Integer> ports = new ConcurrentHashMap<>();
  final Map<String, KilnProcess> processes = new ConcurrentHashMap<>();
  List<String> common;

  private JsonNode awaitEntry(String id) {
    JsonNode e = cli.awaitEntry(id, processes.get(id), START, true);
    ports.put(id, e.path("httpPort").asInt());
    return e;
  }

  private void start(String id, List<String> first, List<String> more) throws Exception {
    List<String> args = new ArrayList<>(first);
    args.addAll(List.of("--foreground", "--node-id", id));
    args.addAll(common);
    args.addAll(more);
    processes.put(id, cli.startNode(id + "-" + processes.size(), args.toArray(String[]::new)));
  }

  static HttpResponse<String> call(int port, String method, String path, String token, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  JsonNode status() throws Exception {
    return JSON.readTree(call(ports.get("head"), "GET", "/api/v1/status", TOKEN, null).body());
  }

  boolean alive(JsonNode status, String node) {
    for (JsonNode n : status.path("nodes")) {
      if (n.path("id").asText().equals(node)) {
        return n.path("alive").asBoolean();
      }
    }
    return false;
  }

  boolean poolReady(JsonNode status, String node) {
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

  @Test
  void killANodeUnderLoadThenRestartIt() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "nodeloss-" + UUID.randomUUID().toString().substring(0, 8)));
    ExecutorService clients = Executors.newCachedThreadPool();
    try {
      common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
          "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--token", TOKEN,
          "--request-timeout-ms", Long.toString(DEADLINE.toMillis()), "--warmup-seconds", "0");
      start("head", List.of("start", "--head"), List.of());
      String join = "127.0.0.1:" + awaitEntry("head").path("clusterPort").asInt();
      List<String> joinArgs = List.of("start", "--address", join);
      start("n1", joinArgs, List.of("--labels", "zone=x"));
      start("n2", joinArgs, List.of("--labels", "zone=x"));
      awaitEntry("n1");
      awaitEntry("n2");

      // Management refuses without the token; the data plane needs none.
      int head = ports.get("head");
      // Each attempt counted: refused with 401, or let through (any other answer, or none).
      Map<String, Object> tokenFigures = new LinkedHashMap<>();
      long attempts = 0;
      long refused401 = 0;
      List<String> letThrough = new ArrayList<>();
      for (String[] a : new String[][] {{"GET", "/api/v1/status", null, null}, {"GET", "/api/v1/status", TOKEN + "x", null},
          {"POST", "/api/v1/deployments", null, YAML}, {"POST", "/api/v1/deployments", TOKEN + "x", YAML},
          {"DELETE", "/api/v1/deployments/echo", null, null}, {"DELETE", "/api/v1/deployments/echo", TOKEN + "x", null}}) {
        attempts++;
        String what = a[0] + " " + a[1] + (a[2] == null ? " without the token" : " with a wrong token");
        try {
          int code = call(head, a[0], a[1], a[2], a[3]).statusCode();
          if (code == 401) {
            refused401++;
          } else {
            letThrough.add(what + ": " + code);
          }
        } catch (java.io.IOException e) {
          letThrough.add(what + ": " + e);
        }
      }
      tokenFigures.put("attempts", attempts);
      tokenFigures.put("refused401", refused401);
      tokenFigures.put("letThrough", letThrough.size());
      tokenFigures.put("letThroughExamples", letThrough);
      assertThat(letThrough).as("management calls without the right token that were not refused").isEmpty();
      HttpResponse<String> applied = call(head, "POST", "/api/v1/deployments", TOKEN, YAML);
      assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
      await().atMost(START).pollInterval(Duration.ofMillis(250))
          .until(() -> alive(status(), "n1") && poolReady(status(), "n1") && poolReady(status(), "n2"));
      for (String g : List.of("head", "n1", "n2")) {
        await().atMost(Duration.ofSeconds(60)).until(() ->
            call(ports.get(g), "GET", "/v2/models/echo/ready", null, null).statusCode() == 200);
      }

      // Steady traffic through every gateway.
      Map<String, Tally> tallies = new LinkedHashMap<>();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicBoolean n1Killed = new AtomicBoolean();
      List<java.util.concurrent.Future<?>> loops = new ArrayList<>();
      for (String g : List.of("head", "n1", "n2")) {
        Tally t = new Tally();
        tallies.put(g, t);
        for (int c = 0; c < CLIENTS_PER_GATEWAY; c++) {
          loops.add(clients.submit(() -> traffic(g, t, stop, n1Killed)));
        }
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> tallies.get("head").ranOn.containsKey("n1")
          && tallies.get("head").ranOn.containsKey("n2"));
      long[] before = {tallies.get("head").ok.get(), tallies.get("n1").ok.get(), tallies.get("n2").ok.get()};
      await().atMost(Duration.ofMinutes(10)).until(() -> tallies.get("head").ok.get() >= before[0] + PHASE_REQUESTS
          && tallies.get("n1").ok.get() >= before[1] + PHASE_REQUESTS && tallies.get("n2").ok.get() >= before[2] + PHASE_REQUESTS);

      long killedAt = System.nanoTime();
      n1Killed.set(true);
      processes.get("n1").kill(); // SIGKILL
      assertThat(processes.get("n1").isAlive()).isFalse();
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> !alive(status(), "n1"));
      long deadInStatusMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> !poolReady(status(), "n1"));
      long poolGoneMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
      // The survivors keep serving after the detection.
      long[] detected = {tallies.get("head").ok.get(), tallies.get("n2").ok.get()};
      await().atMost(Duration.ofMinutes(10)).until(() -> tallies.get("head").ok.get() >= detected[0] + PHASE_REQUESTS
          && tallies.get("n2").ok.get() >= detected[1] + PHASE_REQUESTS);
      long routingExcludedMs = Math.max(0, TimeUnit.NANOSECONDS.toMillis(Math.max(
          tallies.get("head").lastFailureNanos, tallies.get("n2").lastFailureNanos) - killedAt));

      // Restart n1 with the same id: it rejoins, gets its pool back, and the head routes to it again.
      long restartedAt = System.nanoTime();
      long headOnN1Before = tallies.get("head").lastOnN1Nanos;
      start("n1", joinArgs, List.of("--labels", "zone=x"));
      awaitEntry("n1");
      long joinedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt);
      await().atMost(START).pollInterval(Duration.ofMillis(100)).until(() -> alive(status(), "n1") && poolReady(status(), "n1"));
      long poolReadyMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> tallies.get("head").lastOnN1Nanos > restartedAt);
      long servingAgainMs = TimeUnit.NANOSECONDS.toMillis(tallies.get("head").lastOnN1Nanos - restartedAt);
      stop.set(true);
      for (var f : loops) {
        f.get(2, TimeUnit.MINUTES);
      }
      assertThat(headOnN1Before).isPositive();

      long sent = 0;
      long ok = 0;
      long clean = 0;
      long lost = 0;
      for (Map.Entry<String, Tally> e : tallies.entrySet()) {
        Tally t = e.getValue();
        assertThat(t.lost.get()).as("lost through %s: %s", e.getKey(), t.lostExamples).isZero();
        sent += t.sent.get();
        ok += t.ok.get();
        clean += t.clean.get();
        lost += t.lost.get();
      }
      assertThat(tallies.get("head").ok.get()).isPositive();
      assertThat(tallies.get("n2").clean.get()).as("n2 serves its own pool throughout").isZero();

      Map<String, Object> f = new LinkedHashMap<>();
      f.put("scenario", "node-loss");
      f.putAll(RunStamp.fields());
      f.put("nodes", 3);
      f.put("clients", 3 * CLIENTS_PER_GATEWAY);
      f.put("requestsPerPhasePerGateway", PHASE_REQUESTS);
      f.put("deadlineMs", DEADLINE.toMillis());
      f.put("sent", sent);
      f.put("succeeded", ok);
      f.put("failedCleanly", clean);
      f.put("lost", lost);
      f.put("killedGatewayConnectionErrors", tallies.get("n1").refusedConnection.get());
      f.put("deadInStatusMs", deadInStatusMs);
      f.put("poolNotReadyInStatusMs", poolGoneMs);
      f.put("lastFailedRequestAfterKillMs", routingExcludedMs);
      f.put("restartJoinedMs", joinedMs);
      f.put("restartPoolReadyMs", poolReadyMs);
      f.put("restartServingViaHeadMs", servingAgainMs);
      Map<String, Object> by = new LinkedHashMap<>();
      tallies.forEach((k, v) -> by.put(k, v.figures()));
      f.put("byGateway", by);
      f.put("managementToken", tokenFigures);
      String json = new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(f);
      Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
      Files.createDirectories(out);
      Files.writeString(out.resolve("node-loss.json"), json);
      System.out.println("RELIABILITY node-loss " + new ObjectMapper().writeValueAsString(f));
    } finally {
      clients.shutdownNow();
      cli.close();
    }
  }

  /** One closed-loop client through gateway {@code g}; classifies every answer. */
  private void traffic(String g, Tally t, AtomicBoolean stop, AtomicBoolean n1Killed) {
    int i = 0;
    while (!stop.get()) {
      if (g.equals("n1") && n1Killed.get() && !processes.get("n1").isAlive()) {
        return; // the killed gateway: its in-flight requests were counted; a restarted n1 gets no client
      }
      float v = ++i + Math.abs(Thread.currentThread().getId() % 1000) * 1000f;
      String data = "[" + v + "," + (-v) + "]";
      String body = OipRequest.fp32("x", new long[] {1, 2}, v, -v).json();
      HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(g) + "/v2/models/echo/infer"))
          .timeout(DEADLINE.plus(SLACK)).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build();
      t.sent.incrementAndGet();
      long start = System.nanoTime();
      try {
        HttpResponse<String> r = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        t.codes.computeIfAbsent(r.statusCode(), k -> new AtomicLong()).incrementAndGet();
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        if (tookMs > DEADLINE.plus(SLACK).toMillis()) {
          lost(t, "answered " + r.statusCode() + " after " + tookMs + " ms");
        } else if (r.statusCode() == 200 && r.body().replace(" ", "").contains("\"data\":" + data)) {
          t.ok.incrementAndGet();
          String node = JSON.readTree(r.body()).path("parameters").path("kiln_node").asText("?");
          t.ranOn.computeIfAbsent(node, k -> new AtomicLong()).incrementAndGet();
          if (node.equals("n1")) {
            t.lastOnN1Nanos = System.nanoTime();
          }
        } else if ((r.statusCode() == 503 && r.headers().firstValue("Retry-After").isPresent()
            || r.statusCode() == 504) && r.body().contains("\"error\"")) {
          t.clean.incrementAndGet();
          t.lastFailureNanos = System.nanoTime();
        } else {
          lost(t, r.statusCode() + " " + r.body());
        }
      } catch (HttpTimeoutException e) {
        lost(t, "no answer within " + DEADLINE.plus(SLACK).toMillis() + " ms");
      } catch (java.io.IOException e) {
        if (g.equals("n1") && n1Killed.get()) {
          t.refusedConnection.incrementAndGet(); // the killed gateway itself: reset or refused at once
        } else {
          lost(t, e.toString() + (e instanceof ConnectException ? " (connect)" : ""));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception e) {
        lost(t, e.toString());
      }
    }
  }

  private static void lost(Tally t, String why) {
    t.lost.incrementAndGet();
    if (t.lostExamples.size() < 10) {
      t.lostExamples.add(why);
    }
  }
}
