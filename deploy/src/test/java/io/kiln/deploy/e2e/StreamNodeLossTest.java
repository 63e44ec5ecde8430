package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A node killed mid-stream: the client reads server-sent events through node a's gateway from a worker on node
 * b; b dies as SIGKILL would (its Hazelcast member and event bus vanish). The stream ends with a final
 * {@code event: error} naming what happened, within the cluster's failure detection, and never hangs.
 */
class StreamNodeLossTest {

  static final String YAML = """
      deployments:
        - name: tokens
          version: "1"
          model:
            uri: builtin:chunks
            engine: Builtin
            streaming: true
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, node_selector: {zone: b}}
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
      """;

  @Test
  void aNodeKilledMidStreamEndsTheStreamWithAnErrorEvent() throws Exception {
    Map<String, Map<String, String>> nodes = new LinkedHashMap<>();
    nodes.put("a", Map.of("zone", "a"));
    nodes.put("b", Map.of("zone", "b"));
    try (ServingCluster cluster = ServingCluster.start(nodes)) {
      assertThat(cluster.deploy(YAML).applied()).isTrue();
      cluster.awaitReady("tokens", 1);
      List<String> lines = new CopyOnWriteArrayList<>();
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.node("a").httpPort()
              + "/v2/models/tokens/generate_stream")).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(
              "{\"x\":[1,2],\"parameters\":{\"chunks\":100000,\"delay_ms\":20}}")).build();
      CompletableFuture<HttpResponse<Void>> response = client.sendAsync(request,
          HttpResponse.BodyHandlers.ofLines()).thenApply(r -> {
            r.body().forEach(lines::add);
            return null;
          });
      await().atMost(ServingCluster.WAIT).until(() -> lines.stream().filter(l -> l.startsWith("data: ")).count() >= 3);

      long killed = System.nanoTime();
      cluster.crash("b");
      response.get(ServingCluster.WAIT.toSeconds(), TimeUnit.SECONDS); // ends: no hang
      long endedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);

      // The one stream counted: ended with a final error event (failed cleanly), or anything else (lost: no error
      // event, data after it, or no end).
      int error = lines.indexOf("event: error");
      boolean clean = error > 0 && error + 1 < lines.size() && lines.get(error + 1).startsWith("data: ")
          && lines.get(error + 1).contains("\"error\"")
          && lines.subList(error + 2, lines.size()).stream().noneMatch(l -> l.startsWith("data: "));
      long chunks = lines.stream().filter(l -> l.startsWith("data: ")).count() - (error > 0 ? 1 : 0);
      new Figures("stream-node-loss").put("streams", 1).put("endedWithErrorEvent", clean ? 1 : 0)
          .put("lost", clean ? 0 : 1).put("chunksBeforeTheEnd", chunks).put("chunkDelayMs", 20)
          .put("endedAfterKillMs", endedMs).put("errorEvent", error > 0 && error + 1 < lines.size()
              ? lines.get(error + 1).substring("data: ".length()) : null).write();
      assertThat(error).as("a final error event, in %s", lines.subList(Math.max(0, lines.size() - 6), lines.size()))
          .isPositive();
      assertThat(lines.get(error + 1)).startsWith("data: ").contains("\"error\"");
      assertThat(lines.subList(error + 2, lines.size())).noneMatch(l -> l.startsWith("data: "));
      System.out.printf("stream node loss: %d chunks before the kill, error event %d ms after it: %s%n",
          chunks, endedMs, lines.get(error + 1));
    }
  }
}
