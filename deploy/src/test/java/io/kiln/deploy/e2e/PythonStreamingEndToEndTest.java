package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.PoolStats;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The streaming example {@code deploy/examples/streaming} (a Python {@code predict_stream} generator in a real
 * worker process) served by an assembled node: tokens over SSE and gathered, and a client that goes away
 * mid-stream closes the generator and frees the only worker.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class PythonStreamingEndToEndTest {

  static final String YAML = """
      deployments:
        - name: tokens
          version: "1"
          model:
            uri: deploy/examples/streaming
            engine: Python
            streaming: true
            python: {interpreter: %s}
            inputs:
              - {name: prompt,     datatype: INT64, shape: [-1, -1]}
              - {name: max_tokens, datatype: INT32, shape: [-1, 1]}
            outputs: [{name: token, datatype: INT64, shape: [-1, 1]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 1}
      """;

  private ServingCluster cluster;
  private final Http http = new Http();
  private int port;

  @BeforeAll
  void start() {
    cluster = ServingCluster.start("node-1");
    cluster.deploy(YAML.formatted(PythonInterpreter.path()));
    cluster.awaitReady("tokens", 1);
    port = cluster.node("node-1").httpPort();
  }

  @AfterAll
  void stop() {
    cluster.close();
  }

  @Test
  void tokensStreamAsEventsAndGatherIntoOneAnswer() {
    Http.Response sse = http.postJson(port, "/v2/models/tokens/generate_stream", "{\"prompt\":[5,6,7],\"max_tokens\":4}");
    assertThat(sse.status()).isEqualTo(200);
    List<StreamingEndToEndTest.Event> events = StreamingEndToEndTest.events(sse.text());
    assertThat(events).extracting(e -> e.json().getLong("token")).containsExactly(8L, 9L, 10L, 11L);

    Http.Response one = http.postJson(port, "/v2/models/tokens/generate", "{\"prompt\":[5,6,7],\"max_tokens\":3}");
    assertThat(one.status()).as(one.text()).isEqualTo(200);
    assertThat(one.json().getJsonArray("token").stream().map(v -> ((Number) v).longValue()).toList())
        .containsExactly(8L, 9L, 10L);
  }

  @Test
  void aClientThatGoesAwayClosesTheGeneratorAndFreesTheWorker() throws IOException {
    try (Socket s = new Socket(ServingCluster.HOST, port)) {
      byte[] body = "{\"prompt\":[1],\"max_tokens\":100000000}".getBytes(StandardCharsets.UTF_8);
      OutputStream out = s.getOutputStream();
      out.write(("POST /v2/models/tokens/generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      String seen = "";
      while (!seen.contains("\"token\":3")) {
        int n = in.read(buf);
        assertThat(n).isPositive();
        seen += new String(buf, 0, n, StandardCharsets.UTF_8);
      }
    }
    await().atMost(ServingCluster.WAIT).until(() -> {
      PoolStats st = cluster.stats("tokens", "1", "node-1");
      return st.busyWorkers() == 0 && st.outstanding() == 0;
    });
    Http.Response next = http.postJson(port, "/v2/models/tokens/generate", "{\"prompt\":[1],\"max_tokens\":2}");
    assertThat(next.status()).isEqualTo(200);
  }
}
