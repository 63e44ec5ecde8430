package io.kiln.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.control.support.RouterServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code GET /api/v1/logs} over a fake {@link LogSource}: the lines as text, the node named in {@code Kiln-Node},
 * 400 naming a bad field, 404 for an unknown node, 502 when a node's lines cannot be read, the token, and follow.
 */
@Tag("slow")
class LogsApiTest {

  static final String TOKEN = "t0ken";
  static final String AUTH = "Bearer " + TOKEN;

  /** Node "a" holds {@link #lines}; "b" fails to answer properly; any other node is unknown. */
  final class Source implements LogSource {
    final List<String> lines = new CopyOnWriteArrayList<>(List.of("one", "two", "three"));

    @Override
    public String nodeId() {
      return "a";
    }

    @Override
    public int maxLines() {
      return 50;
    }

    @Override
    public CompletionStage<Chunk> read(String node, long after, int max) {
      if (node.equals("b")) {
        return CompletableFuture.failedFuture(new IllegalStateException("garbled reply"));
      }
      if (!node.equals("a")) {
        return CompletableFuture.failedFuture(new NoSuchNode("no node '" + node + "' answers"));
      }
      int from = after < 0 ? Math.max(0, lines.size() - max) : (int) after;
      List<String> out = new ArrayList<>(lines.subList(Math.min(from, lines.size()),
          Math.min(lines.size(), from + max)));
      return CompletableFuture.completedFuture(new Chunk(out, from + out.size(), 0));
    }
  }

  final Source source = new Source();
  RouterServer server;

  RouterServer server() {
    server = new RouterServer((vertx, r) -> new LogsApi(vertx, source, TOKEN).mount(r));
    return server;
  }

  @AfterEach
  void close() {
    if (server != null) {
      server.close();
    }
  }

  @Test
  void theLastLinesOfThisNodeAsText() {
    HttpResponse<String> r = server().get("/api/v1/logs?lines=2", "Authorization", AUTH);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).contains("text/plain; charset=utf-8");
    assertThat(r.headers().firstValue("Kiln-Node")).contains("a");
    assertThat(r.body()).isEqualTo("two\nthree\n");
  }

  @Test
  void badFieldsUnknownNodesAndUnreadableNodes() {
    server();
    assertThat(server.get("/api/v1/logs").statusCode()).isEqualTo(401);
    HttpResponse<String> lines = server.get("/api/v1/logs?lines=51", "Authorization", AUTH);
    assertThat(lines.statusCode()).isEqualTo(400);
    assertThat(lines.body()).isEqualTo("{\"error\":\"lines must be a whole number 1..50, got '51'\"}");
    HttpResponse<String> follow = server.get("/api/v1/logs?follow=maybe", "Authorization", AUTH);
    assertThat(follow.statusCode()).isEqualTo(400);
    assertThat(follow.body()).isEqualTo("{\"error\":\"follow must be true or false, got 'maybe'\"}");
    HttpResponse<String> unknown = server.get("/api/v1/logs?node=zz", "Authorization", AUTH);
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(unknown.body()).isEqualTo("{\"error\":\"no node 'zz' answers\"}");
    HttpResponse<String> garbled = server.get("/api/v1/logs?node=b", "Authorization", AUTH);
    assertThat(garbled.statusCode()).isEqualTo(502);
    assertThat(garbled.body()).isEqualTo("{\"error\":\"reading the log of node 'b' failed: garbled reply\"}");
  }

  @Test
  @Timeout(30)
  void followWritesNewLinesAsTheyCome() throws Exception {
    server();
    HttpResponse<java.io.InputStream> r = server.client().send(HttpRequest.newBuilder(
            server.uri("/api/v1/logs?lines=1&follow=true")).header("Authorization", AUTH).build(),
        HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    List<String> read = new CopyOnWriteArrayList<>();
    // Read on a thread of its own, which ends when the server closes the connection after the test.
    BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8));
    Thread reader = new Thread(() -> {
      try {
        in.lines().forEach(read::add);
      } catch (java.io.UncheckedIOException closed) {
        // the server went away
      }
    });
    reader.setDaemon(true);
    reader.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> read.contains("three"));
    source.lines.add("four");
    await().atMost(Duration.ofSeconds(5)).until(() -> read.contains("four"));
    assertThat(read).containsExactly("three", "four");
  }
}
