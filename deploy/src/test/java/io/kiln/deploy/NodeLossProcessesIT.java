package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.gateway.support.Figures;
import io.kiln.testkit.OipRequest;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The stream, batch-job and leader node-loss rows with real processes: each test starts three {@code kiln start
 * --foreground} JVMs (as {@link NodeLossIT} and {@link DrainIT}: a head, {@code n1}, {@code n2}; a unique cluster
 * name, a management token, every port 0) and kills one with SIGKILL ({@link Process#destroyForcibly}). A stream
 * read through {@code n2}'s gateway from a pool on the killed {@code n1} ends with a final error event, never
 * hangs; a job coordinated by the head, whose inputs run on {@code n1} and {@code n2}, still SUCCEEDS with one
 * result per input when {@code n1} dies mid-job; when the head (the leader) dies, a surviving node leads, a
 * deployment applied through it gets READY pools, and inference through the survivors goes on.
 */
class NodeLossProcessesIT {

  static final Duration START = Duration.ofSeconds(180);
  /** How long after the SIGKILL an outcome may take (detection plus a loaded two-core machine). */
  static final Duration AFTER_KILL = Duration.ofSeconds(90);
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final ObjectMapper JSON = new ObjectMapper();
  /** The stream's pace: one chunk every so many ms. */
  static final int CHUNK_MS = 20;
  /** The job's model: {@code builtin:sleep} holds its worker this long a batch (each row's first element). */
  static final int JOB_BATCH_MS = 500;
  /**
   * The job's inputs: 30 in CI, whose survivor alone finishes the job in about a quarter of a minute after the kill
   * ({@code reliability/run.sh node-loss-processes} runs 60).
   */
  static final int JOB_INPUTS = (int) Figures.knob("jobLossProcesses.inputs", 30);

  /** Three node processes: {@code head} (no labels: no pool), {@code n1}, {@code n2} with the given labels. */
  static final class Trio implements AutoCloseable {
    final CliProcesses cli;
    final Map<String, Integer> ports = new LinkedHashMap<>();
    final List<String> common;

    Trio(String name, String n1Labels, String n2Labels) throws Exception {
      cli = new CliProcesses(Path.of("target", "kiln-it", name + "-" + UUID.randomUUID().toString().substring(0, 8)));
      common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
          "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--token", TOKEN,
          "--request-timeout-ms", "10000", "--warmup-seconds", "0");
      start("head", List.of("start", "--head"), List.of());
      List<String> join = List.of("start", "--address", "127.0.0.1:" + awaitEntry("head").path("clusterPort").asInt());
      start("n1", join, List.of("--labels", n1Labels));
      start("n2", join, List.of("--labels", n2Labels));
      awaitEntry("n1");
      awaitEntry("n2");
    }

    private void start(String id, List<String> first, List<String> more) throws Exception {
      List<String> args = new ArrayList<>(first);
      args.addAll(List.of("--foreground", "--node-id", id));
      args.addAll(common);
      args.addAll(more);
      cli.startNode(id, args.toArray(String[]::new));
    }

    private JsonNode awaitEntry(String id) {
      JsonNode e = cli.awaitEntry(id, START);
      ports.put(id, e.path("httpPort").asInt());
      return e;
    }

    int port(String id) {
      return ports.get(id);
    }

    JsonNode status(String via) throws Exception {
      return JSON.readTree(NodeLossIT.call(port(via), "GET", "/api/v1/status", TOKEN, null).body());
    }

    void apply(String via, String yaml) throws Exception {
      HttpResponse<String> r = NodeLossIT.call(port(via), "POST", "/api/v1/deployments", TOKEN, yaml);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }

    /** Waits until {@code deployment}'s pools on {@code nodes} are ready (status read through {@code via}). */
    void awaitPools(String via, String deployment, String... nodes) {
      await().atMost(START).pollInterval(Duration.ofMillis(250)).ignoreExceptions().until(() -> {
        JsonNode s = status(via);
        return Stream.of(nodes).allMatch(n -> poolReady(s, deployment, n));
      });
    }

    void awaitServing(String deployment, String... gateways) {
      for (String g : gateways) {
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() ->
            NodeLossIT.call(port(g), "GET", "/v2/models/" + deployment + "/ready", null, null).statusCode() == 200);
      }
    }

    /** SIGKILL: no drain, no goodbye to the cluster. */
    long kill(String id) throws Exception {
      long at = System.nanoTime();
      cli.node(id).kill();
      assertThat(cli.node(id).isAlive()).as(id + " dies").isFalse();
      return at;
    }

    @Override
    public void close() throws Exception {
      cli.close();
    }
  }

  static boolean poolReady(JsonNode status, String deployment, String node) {
    for (JsonNode d : status.path("deployments")) {
      if (d.path("name").asText().equals(deployment)) {
        for (JsonNode p : d.path("pools")) {
          if (p.path("node").asText().equals(node) && p.path("ready").asBoolean()) {
            return true;
          }
        }
      }
    }
    return false;
  }

  static boolean alive(JsonNode status, String node) {
    for (JsonNode n : status.path("nodes")) {
      if (n.path("id").asText().equals(node)) {
        return n.path("alive").asBoolean();
      }
    }
    return false;
  }

  static long msSince(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
  }

  static String deployment(String name, String uri, String selector, String batching, String extra) {
    return """
        deployments:
          - name: %s
            version: "1"
            model:
              uri: %s
              engine: Builtin%s
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, node_selector: {zone: %s}}
            batching: %s
            queue: {max_queued: 256, timeout_ms: 120000}
        """.formatted(name, uri, extra, selector, batching);
  }

  @Test
  void aNodeKilledMidStreamEndsTheStreamReadThroughAnotherGatewayWithAnErrorEvent() throws Exception {
    try (Trio c = new Trio("stream-loss", "zone=s", "zone=x")) {
      c.apply("head", deployment("tokens", "builtin:chunks", "s", "{max_batch_size: 1, max_batch_delay_ms: 0}",
          "\n      streaming: true"));
      c.awaitPools("head", "tokens", "n1");
      c.awaitServing("tokens", "n2");
      List<String> lines = new CopyOnWriteArrayList<>();
      HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + c.port("n2")
              + "/v2/models/tokens/generate_stream")).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(
              "{\"x\":[1,2],\"parameters\":{\"chunks\":100000,\"delay_ms\":" + CHUNK_MS + "}}")).build();
      CompletableFuture<Void> ended = NodeLossIT.HTTP.sendAsync(request, HttpResponse.BodyHandlers.ofLines())
          .thenAccept(r -> r.body().forEach(lines::add));
      await().atMost(Duration.ofSeconds(60)).until(() -> lines.stream().filter(l -> l.startsWith("data: ")).count() >= 3);

      long killed = c.kill("n1");
      ended.get(AFTER_KILL.toSeconds(), TimeUnit.SECONDS); // the stream ends: no hang
      long endedMs = msSince(killed);
      int error = lines.indexOf("event: error");
      List<String> tail = lines.subList(Math.max(0, lines.size() - 6), lines.size());
      String errorData = error >= 0 && error + 1 < lines.size() ? lines.get(error + 1) : "";
      boolean clean = error > 0 && errorData.startsWith("data: ") && errorData.contains("\"error\"")
          && lines.subList(error + 2, lines.size()).stream().noneMatch(l -> l.startsWith("data: "));
      // The one stream, counted as the in-process StreamNodeLossTest counts it: a final error event with a JSON
      // error and no data after it is failed cleanly; anything else (no error event, data after it) is lost.
      new Figures("stream-node-loss-processes").put("nodes", 3).put("streams", 1)
          .put("endedWithErrorEvent", clean ? 1 : 0).put("lost", clean ? 0 : 1)
          .put("chunksBeforeTheEnd", lines.stream().filter(l -> l.startsWith("data: ")).count() - (error > 0 ? 1 : 0))
          .put("chunkDelayMs", CHUNK_MS).put("endedAfterKillMs", endedMs)
          .put("errorEvent", errorData.startsWith("data: ") ? errorData.substring("data: ".length()) : null).write();
      assertThat(error).as("a final error event, in %s", tail).isPositive();
      assertThat(lines.get(error + 1)).startsWith("data: ").contains("\"error\"");
      assertThat(lines.subList(error + 2, lines.size())).noneMatch(l -> l.startsWith("data: "));
    }
  }

  @Test
  void aNodeKilledMidJobLeavesEveryInputWithExactlyOneResult() throws Exception {
    int inputs = JOB_INPUTS;
    try (Trio c = new Trio("job-loss", "zone=x", "zone=x")) {
      // builtin:sleep holds its worker JOB_BATCH_MS a batch (the first element of each row), batches of up to 2:
      // about 4 inputs a second per node, so the job is still running when n1 dies.
      int maxBatch = 2;
      int perNode = 4;
      c.apply("head", deployment("slow", "builtin:sleep", "x", "{max_batch_size: " + maxBatch
          + ", max_batch_delay_ms: 1}", ""));
      c.awaitPools("head", "slow", "n1", "n2");
      Path in = Files.createDirectories(c.cli.home().resolve("job-in"));
      Set<String> uris = new HashSet<>();
      for (int i = 0; i < inputs; i++) {
        Path f = in.resolve("in-%03d.f32".formatted(i));
        Files.write(f, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putFloat(JOB_BATCH_MS).putFloat(i).array());
        uris.add(f.toUri().toString());
      }
      Path out = c.cli.home().resolve("job-out");
      String job = """
          name: loss
          deployment: slow
          format: raw
          inputs: {folder: %s}
          output: %s
          per_node: %d
          max_in_flight: 16
          """.formatted(in, out, perNode);
      HttpResponse<String> submitted = NodeLossIT.call(c.port("head"), "POST", "/api/v1/jobs", TOKEN, job);
      assertThat(submitted.statusCode()).as(submitted.body()).isEqualTo(202);
      String id = JSON.readTree(submitted.body()).path("job_id").asText();
      String path = "/api/v1/jobs/" + id;
      await().atMost(START).pollInterval(Duration.ofMillis(100)).until(() -> {
        JsonNode s = JSON.readTree(NodeLossIT.call(c.port("head"), "GET", path, TOKEN, null).body());
        return s.path("resultsByNode").path("n1").asLong() >= 2 && s.path("inFlight").asLong() >= 2;
      });
      JsonNode atKill = JSON.readTree(NodeLossIT.call(c.port("head"), "GET", path, TOKEN, null).body());

      long killed = c.kill("n1");
      JsonNode[] end = new JsonNode[1];
      // The survivor alone does the rest, about 4 inputs a second on a quiet machine (slower under load: the time
      // taken is in the figures, endedAfterKillMs, with the load average).
      await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
        end[0] = JSON.readTree(NodeLossIT.call(c.port("head"), "GET", path, TOKEN, null).body());
        return !end[0].path("state").asText().equals("RUNNING");
      });
      long endedMs = msSince(killed);
      JsonNode s = end[0];
      List<String> files;
      try (Stream<Path> list = Files.list(out)) {
        files = list.map(p -> p.getFileName().toString()).filter(n -> !n.equals("_job.json") && !n.equals("_failed"))
            .toList();
      }
      // Counted from the output folder, not from the job's own status: an input has its result when a whole result
      // file names it and carries its value; one the job reports failed is failed cleanly; any other is lost. A
      // second file for an input, or an input counted done twice, is a duplicate; anything else in the folder (a
      // temporary file) is a stray.
      List<String> names = files.stream().filter(n -> n.matches("[0-9a-f]{64}\\.json")).toList();
      Map<String, Integer> filesPerUri = new LinkedHashMap<>();
      Set<String> right = new HashSet<>();
      long wrongValues = 0;
      for (String n : names) {
        JsonNode r = JSON.readTree(out.resolve(n).toFile());
        String uri = r.path("uri").asText();
        filesPerUri.merge(uri, 1, Integer::sum);
        float i = Float.parseFloat(uri.replaceAll(".*in-(\\d+)\\.f32$", "$1"));
        if (r.path("outputs").path(0).path("data").path(1).floatValue() == i) {
          right.add(uri);
        } else {
          wrongValues++;
        }
      }
      long withResult = uris.stream().filter(right::contains).count();
      long extraFiles = filesPerUri.values().stream().mapToLong(k -> k - 1).sum();
      long redispatched = 0;
      for (JsonNode v : s.path("failuresByCause")) {
        redispatched += v.asLong();
      }
      new Figures("job-loss-processes").put("nodes", 3).put("inputs", inputs)
          .put("batchMs", JOB_BATCH_MS).put("maxBatchSize", maxBatch).put("perNode", perNode)
          .put("doneAtKill", atKill.path("done").asLong()).put("inFlightAtKill", atKill.path("inFlight").asLong())
          .put("resultsOfKilledNodeAtKill", atKill.path("resultsByNode").path("n1").asLong())
          .put("state", s.path("state").asText()).put("done", s.path("done").asLong())
          .put("failed", s.path("failed").asLong())
          .put("results", withResult).put("lost", Math.max(0, inputs - withResult - s.path("failed").asLong()))
          .put("duplicated", Math.max(0, s.path("done").asLong() - withResult) + extraFiles)
          .put("wrongValues", wrongValues).put("strayFiles", files.size() - names.size())
          .put("redispatched", redispatched).put("failuresByCause", s.path("failuresByCause"))
          .put("resultsByNode", s.path("resultsByNode")).put("endedAfterKillMs", endedMs).write();
      assertThat(s.path("state").asText()).as(s.toString()).isEqualTo("SUCCEEDED");
      assertThat(s.path("done").asLong()).as(s.toString()).isEqualTo(inputs);
      assertThat(s.path("failed").asLong()).as(s.toString()).isZero();
      assertThat(files).as("only whole results (no temporary files)").allMatch(n -> n.matches("[0-9a-f]{64}\\.json"))
          .hasSize(inputs);
      Set<String> seen = new HashSet<>();
      for (String n : names) {
        JsonNode r = JSON.readTree(out.resolve(n).toFile());
        assertThat(seen.add(r.path("uri").asText())).as("one result per input: " + n).isTrue();
        float i = Float.parseFloat(r.path("uri").asText().replaceAll(".*in-(\\d+)\\.f32$", "$1"));
        assertThat(r.path("outputs").path(0).path("data").get(1).floatValue()).as(n).isEqualTo(i);
      }
      assertThat(seen).isEqualTo(uris);
    }
  }

  @Test
  void theLeaderKilledHandsReconciliationToASurvivorAndInferenceGoesOn() throws Exception {
    ExecutorService clients = Executors.newSingleThreadExecutor();
    try (Trio c = new Trio("leader-loss", "zone=x", "zone=x")) {
      String batching = "{max_batch_size: 8, max_batch_delay_ms: 1}";
      c.apply("head", deployment("echo", "builtin:identity", "x", batching, ""));
      c.awaitPools("head", "echo", "n1", "n2");
      c.awaitServing("echo", "n1", "n2");
      assertThat(c.status("n1").path("leader").asText()).isEqualTo("head");

      // A closed-loop client through n2's gateway across the kill: every answer a 200 with its data, or a clean
      // refusal (503 with Retry-After, 504); none hangs past its timeout.
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong ok = new AtomicLong();
      AtomicLong refused = new AtomicLong();
      ConcurrentLinkedQueue<String> unclean = new ConcurrentLinkedQueue<>();
      Future<?> loop = clients.submit(() -> traffic(c.port("n2"), stop, ok, refused, unclean));
      await().atMost(Duration.ofSeconds(60)).until(() -> ok.get() >= 50);

      long okAtKill = ok.get();
      long killed = c.kill("head");
      String[] leader = new String[1];
      await().atMost(AFTER_KILL).pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
        JsonNode s = c.status("n1");
        leader[0] = s.path("leader").asText();
        return !alive(s, "head") && (leader[0].equals("n1") || leader[0].equals("n2"));
      });
      long leaderMs = msSince(killed);
      long okAtNewLeader = ok.get();
      c.apply("n1", deployment("echo2", "builtin:identity", "x", batching, ""));
      c.awaitPools("n1", "echo2", "n1", "n2");
      long readyMs = msSince(killed);
      c.awaitServing("echo2", "n2");
      HttpResponse<String> r = infer(c.port("n2"), "echo2", 7f, -7f);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      long okAtReady = ok.get();
      await().atMost(Duration.ofSeconds(60)).until(() -> ok.get() >= okAtReady + 50);
      stop.set(true);
      loop.get(60, TimeUnit.SECONDS);
      // Every request of the client is in exactly one count: a 200 with its own data (succeeded), a clean refusal
      // (503 with Retry-After, or 504, with a JSON error), or anything else, a transport error included (lost).
      List<String> examples = unclean.stream().limit(3).toList();
      new Figures("leader-loss-processes").put("nodes", 3).put("clients", 1)
          .put("sent", ok.get() + refused.get() + unclean.size()).put("succeeded", ok.get())
          .put("failedCleanly", refused.get()).put("lost", unclean.size()).put("lostExamples", examples)
          .put("succeededBeforeKill", okAtKill).put("succeededKillToNewLeader", okAtNewLeader - okAtKill)
          .put("succeededWhileRedeploying", okAtReady - okAtNewLeader).put("succeededAfter", ok.get() - okAtReady).put("newLeader", leader[0])
          .put("newLeaderMs", leaderMs).put("secondDeploymentReadyMs", readyMs)
          .put("secondDeploymentStatus", r.statusCode()).write();
      assertThat(unclean).as("answers neither 200 nor a clean refusal").isEmpty();
    } finally {
      clients.shutdownNow();
    }
  }

  static HttpResponse<String> infer(int port, String model, float a, float b) throws Exception {
    String body = OipRequest.fp32("x", new long[] {1, 2}, a, b).json();
    return NodeLossIT.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/models/"
            + model + "/infer")).timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static void traffic(int port, AtomicBoolean stop, AtomicLong ok, AtomicLong refused,
                              ConcurrentLinkedQueue<String> unclean) {
    for (int i = 1; !stop.get(); i++) {
      String data = "[" + (float) i + "," + (float) -i + "]";
      try {
        HttpResponse<String> r = infer(port, "echo", i, -i);
        if (r.statusCode() == 200 && r.body().replace(" ", "").contains("\"data\":" + data)) {
          ok.incrementAndGet();
        } else if ((r.statusCode() == 503 && r.headers().firstValue("Retry-After").isPresent()
            || r.statusCode() == 504) && r.body().contains("\"error\"")) {
          refused.incrementAndGet();
        } else {
          unclean.add(r.statusCode() + " " + r.body());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception e) {
        unclean.add(e.toString());
      }
    }
  }
}
