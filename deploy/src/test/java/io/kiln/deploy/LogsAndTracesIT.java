package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Logs and traces of a real two-process cluster, started with the {@code kiln} command: the head in the foreground
 * with JSON logs at debug level, a node in the background (text logs in {@code .kiln/logs/n2.log}), both exporting
 * spans to a real OTLP/HTTP receiver in this test. A request sent to the head and pinned to the other node carries
 * its traceparent across the event bus: its gateway span comes from the head, its queue and batch spans from n2,
 * children of the head's. {@code kiln logs} reads n2's file, the head through its management API, and follows n2
 * through the head's API, which asks n2 over the cluster.
 */
class LogsAndTracesIT {

  static final Duration START = Duration.ofSeconds(180);
  static final Duration COMMAND = Duration.ofSeconds(120);
  static final String TRACE = "5bf92f3577b34da6a3ce929d0e0e4737";
  static final String PARENT = "10f067aa0ba902b8";
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  static CliProcesses cli;
  static OtlpReceiver receiver;
  static KilnProcess head;
  static KilnProcess follow;
  static int headPort;
  static int n2Port;

  @BeforeAll
  static void startCluster() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "logs-" + UUID.randomUUID().toString().substring(0, 8)));
    receiver = new OtlpReceiver();
    List<String> common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
        "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--warmup-seconds", "0", "--otel-endpoint",
        receiver.endpoint());
    head = cli.startNode("head", args(List.of("start", "--head", "--foreground", "--node-id", "head",
        "--log-format", "json", "--log-level", "debug"), common));
    JsonNode h = cli.awaitEntry("head", START);
    headPort = h.path("httpPort").asInt();
    CliProcesses.Result n2 = cli.run(START, args(List.of("start", "--address", "127.0.0.1:"
        + h.path("clusterPort").asInt(), "--node-id", "n2"), common));
    assertThat(n2.code()).as(n2.output()).isZero();
    n2Port = cli.entry("n2").orElseThrow().path("httpPort").asInt();
    // Follows n2's log through the head's API before anything is deployed, so the pool's start-up lines come later.
    follow = cli.startNode("follow", "logs", "n2", "--follow", "--lines", "1", "--address",
        "http://127.0.0.1:" + headPort);
    Path yaml = cli.home().resolve("echo.yaml");
    Files.writeString(yaml, TracingEndToEndTest.YAML);
    CliProcesses.Result applied = cli.run(COMMAND, "deploy", yaml.toString());
    assertThat(applied.code()).as(applied.output()).isZero();
    for (int port : new int[] {headPort, n2Port}) {
      await().atMost(START).pollInterval(Duration.ofMillis(500)).until(() ->
          get(port, "/v2/models/echo/ready").statusCode() == 200);
    }
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (cli != null) {
      cli.close();
    }
    if (receiver != null) {
      receiver.close();
    }
  }

  private static String[] args(List<String> first, List<String> rest) {
    List<String> all = new ArrayList<>(first);
    all.addAll(rest);
    return all.toArray(String[]::new);
  }

  static HttpResponse<String> get(int port, String path) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aRequestPinnedToAnotherNodeCarriesItsTraceAcrossTheCluster() throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + headPort
            + "/v2/models/echo/infer")).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .header("kiln-node", "n2").header("traceparent", "00-" + TRACE + "-" + PARENT + "-01")
        .POST(HttpRequest.BodyPublishers.ofString(TracingEndToEndTest.BODY.replace("req-7", "req-it"))).build(),
        HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(JSON.readTree(r.body()).path("parameters").path("kiln_node").asText()).isEqualTo("n2");
    await().atMost(Duration.ofSeconds(60)).until(() -> receiver.spans(TRACE).size() >= 3);
    List<OtlpReceiver.Received> spans = receiver.spans(TRACE);
    OtlpReceiver.Received gateway = TracingEndToEndTest.one(spans, "kiln.gateway.request");
    OtlpReceiver.Received queue = TracingEndToEndTest.one(spans, "kiln.pool.queue");
    OtlpReceiver.Received batch = TracingEndToEndTest.one(spans, "kiln.worker.batch");
    assertThat(gateway.parentSpanId()).isEqualTo(PARENT);
    assertThat(gateway.serviceInstance()).isEqualTo("head");
    assertThat(queue.serviceInstance()).isEqualTo("n2");
    assertThat(batch.serviceInstance()).isEqualTo("n2");
    assertThat(queue.parentSpanId()).isEqualTo(gateway.spanId());
    assertThat(batch.parentSpanId()).isEqualTo(gateway.spanId());
    assertThat(r.headers().firstValue("traceparent")).hasValue("00-" + TRACE + "-" + gateway.spanId() + "-01");

    // The head logs JSON, one object per line; at debug level its gateway names the request and its trace.
    await().atMost(Duration.ofSeconds(30)).until(() -> requestLine("req-it") != null);
    JsonNode line = requestLine("req-it");
    assertThat(line.path("trace_id").asText()).isEqualTo(TRACE);
    assertThat(line.path("node").asText()).isEqualTo("head");
    assertThat(line.path("level").asText()).isEqualTo("DEBUG");
    assertThat(line.path("logger").asText()).isEqualTo("io.kiln.gateway.impl.HttpInfer");
    assertThat(line.has("time") && line.has("thread") && line.has("message")).isTrue();
  }

  /** The head's JSON log line naming {@code requestId}, or null; every line the logger wrote must be JSON. */
  private static JsonNode requestLine(String requestId) throws Exception {
    JsonNode found = null;
    for (String l : cli.output("head").lines().toList()) {
      if (!l.startsWith("{")) {
        assertThat(l).as("only the kiln command's own lines are not JSON").startsWith("kiln: ");
        continue;
      }
      JsonNode j = JSON.readTree(l);
      if (requestId.equals(j.path("request_id").asText())) {
        found = j;
      }
    }
    return found;
  }

  @Test
  void kilnLogsReadsALocalNodesFileAndAnyNodeThroughTheApi() throws Exception {
    CliProcesses.Result file = cli.run(COMMAND, "logs", "n2", "--lines", "3");
    assertThat(file.code()).as(file.output()).isZero();
    List<String> tail = file.output().lines().toList();
    List<String> all = Files.readAllLines(cli.home().resolve(".kiln/logs/n2.log"));
    assertThat(tail).hasSize(3).isEqualTo(all.subList(all.size() - 3, all.size()));

    // The head runs in the foreground (no file here): read through the API; its lines are JSON.
    CliProcesses.Result api = cli.run(COMMAND, "logs", "head", "--lines", "5");
    assertThat(api.code()).as(api.output()).isZero();
    assertThat(api.output().lines().toList()).hasSize(5).allSatisfy(l -> assertThat(JSON.readTree(l).path("node")
        .asText()).isEqualTo("head"));

    // Through the head's API, n2's own buffer: text lines, the same as its file holds.
    HttpResponse<String> remote = get(headPort, "/api/v1/logs?node=n2&lines=20");
    assertThat(remote.statusCode()).as(remote.body()).isEqualTo(200);
    assertThat(remote.headers().firstValue("Kiln-Node")).hasValue("n2");
    List<String> n2Lines = remote.body().lines().toList();
    List<String> n2File = Files.readAllLines(cli.home().resolve(".kiln/logs/n2.log"));
    assertThat(n2Lines).isNotEmpty().hasSizeLessThanOrEqualTo(20).allSatisfy(l -> {
      assertThat(l).doesNotStartWith("{");
      assertThat(n2File).contains(l);
    });
    assertThat(n2Lines).anySatisfy(l -> assertThat(l).contains("INFO KilnNode - node n2 serving"));

    CliProcesses.Result unknown = cli.run(COMMAND, "logs", "nope", "--address", "http://127.0.0.1:" + headPort);
    assertThat(unknown.code()).isEqualTo(1);
    assertThat(unknown.output()).contains("404").contains("no node 'nope'");
    assertThat(get(headPort, "/api/v1/logs?lines=abc").statusCode()).isEqualTo(400);
    assertThat(get(headPort, "/api/v1/logs?lines=abc").body()).contains("lines must be");
    assertThat(get(headPort, "/api/v1/logs?follow=maybe").body()).contains("follow must be");
    CliProcesses.Result zero = cli.run(COMMAND, "logs", "--lines", "0");
    assertThat(zero.code()).isEqualTo(1);
    assertThat(zero.output()).contains("--lines must be 1..10000");
  }

  @Test
  void kilnLogsFollowsAnotherNodeThroughTheCluster() {
    // Started before the deployment: the pool n2 started since came over the follow.
    follow.awaitLog("worker kiln/pool/echo@1/n2/worker-0 ready", Duration.ofSeconds(60));
    assertThat(follow.isAlive()).isTrue();
  }
}
