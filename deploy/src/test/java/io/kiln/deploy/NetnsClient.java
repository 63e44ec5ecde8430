package io.kiln.deploy;

import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.testkit.KilnProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The client host of a multi-host test: a JVM inside its own network namespace (the test's JVM stays in the root
 * namespace, which has no route to the test's network) that makes the test's HTTP calls and runs its
 * {@link ClosedLoopLoad}. Commands arrive as JSON lines on stdin, answers leave as JSON lines on stdout with the
 * command's {@code id} — pipes cross network namespaces. Commands: {@code http} (method, url, token, body: answers
 * status, body, Retry-After), {@code load} (starts the traffic, see {@link ClosedLoopLoad.Options}), {@code phase},
 * {@code unpin} (answers how many requests pinned to the node are in flight; see {@link #unpin}), {@code stop} (answers once every request ended and the counts file is final). The end of stdin
 * (the test went away) ends it.
 */
final class NetnsClient {

  private NetnsClient() {
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
        StandardCharsets.UTF_8);
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    ClosedLoopLoad load = null;
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      JsonNode c = ClosedLoopLoad.JSON.readTree(line);
      long id = c.path("id").asLong();
      ObjectNode reply = ClosedLoopLoad.JSON.createObjectNode().put("id", id);
      try {
        switch (c.path("op").asText()) {
          case "http" -> {
            http(http, c, reply, out);
            continue; // answers when the call ends
          }
          case "load" -> {
            List<ClosedLoopLoad.Group> groups = new ArrayList<>();
            for (JsonNode g : c.path("groups")) {
              groups.add(new ClosedLoopLoad.Group(g.path("model").asText(), g.path("pinnedTo").asText(null),
                  g.path("clients").asInt(), g.path("holdMillis").asInt()));
            }
            load = new ClosedLoopLoad(new ClosedLoopLoad.Options(URI.create(c.path("gateway").asText()), groups,
                Duration.ofMillis(c.path("deadlineMs").asLong()), Duration.ofMillis(c.path("slackMs").asLong()),
                Path.of(c.path("out").asText())), c.path("phase").asText());
            load.start();
          }
          case "phase" -> load.phase(c.path("name").asText());
          case "unpin" -> unpin(load, c, reply);
          case "stop" -> {
            if (load != null) {
              load.stop();
              reply.set("counts", load.counts());
            }
          }
          default -> throw new IllegalArgumentException("unknown op in " + line);
        }
        reply.put("ok", true);
      } catch (RuntimeException e) {
        reply.put("error", e.toString());
      }
      answer(out, reply);
    }
    if (load != null) {
      load.stop();
    }
  }

  /**
   * Unpins {@code node}. With {@code whenHeld: {group, millis, atMostMillis}}: first waits until a request of that
   * group has been in flight {@code millis} to {@code atMostMillis} (so it is surely at the node's worker, and stays a
   * while longer), then, once unpinned, until every other request pinned
   * to the node has ended, so that only the held one is in flight there when the answer comes.
   */
  private static void unpin(ClosedLoopLoad load, JsonNode c, ObjectNode reply) {
    String node = c.path("node").asText();
    JsonNode held = c.path("whenHeld");
    String kind = held.path("group").asText(null);
    if (kind != null) {
      long from = held.path("millis").asLong();
      long to = held.path("atMostMillis").asLong(Long.MAX_VALUE);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5)).until(() -> {
        long age = load.oldestInFlightMillis(kind);
        return age >= from && age <= to;
      });
    }
    reply.set("pinnedInFlightAtUnpin", ClosedLoopLoad.JSON.valueToTree(load.unpin(node)));
    if (kind != null) {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(2)).until(() -> load.pinnedInFlight(node)
          .entrySet().stream().allMatch(e -> e.getKey().equals(kind) || e.getValue() == 0));
      reply.put("heldMillis", load.oldestInFlightMillis(kind));
    }
    reply.set("pinnedInFlight", ClosedLoopLoad.JSON.valueToTree(load.pinnedInFlight(node)));
  }

  private static void http(HttpClient http, JsonNode c, ObjectNode reply, PrintStream out) {
    String body = c.path("body").isTextual() ? c.path("body").asText() : null;
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(c.path("url").asText()))
        .timeout(Duration.ofMillis(c.path("timeoutMs").asLong(30_000)))
        .method(c.path("method").asText("GET"), body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (c.path("token").isTextual()) {
      b.header("Authorization", "Bearer " + c.path("token").asText());
    }
    http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString()).whenComplete((r, err) -> {
      if (err != null) {
        reply.put("error", err.toString());
      } else {
        reply.put("status", r.statusCode()).put("body", r.body());
        r.headers().firstValue("Retry-After").ifPresent(v -> reply.put("retryAfter", v));
      }
      answer(out, reply);
    });
  }

  private static void answer(PrintStream out, ObjectNode reply) {
    synchronized (out) {
      out.println(reply.toString());
    }
  }

  /** The test's side: starts the client in a namespace and sends it commands. */
  static final class Remote implements AutoCloseable {

    /** An HTTP answer the client relayed. */
    record Answer(int status, String body, String retryAfter) {
      JsonNode json() {
        try {
          return ClosedLoopLoad.JSON.readTree(body);
        } catch (IOException e) {
          throw new AssertionError("not JSON (" + status + "): " + body, e);
        }
      }
    }

    private final Process process;
    private final OutputStream stdin;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<JsonNode>> waiting = new ConcurrentHashMap<>();
    private final Thread reader;

    Remote(List<String> wrapper, Path log) throws IOException {
      List<String> cmd = new ArrayList<>(wrapper);
      cmd.add(KilnProcess.javaBinary());
      cmd.addAll(List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
          KilnProcess.testClasspath(), NetnsClient.class.getName()));
      process = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
      stdin = process.getOutputStream();
      reader = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
            StandardCharsets.UTF_8))) {
          for (String line; (line = r.readLine()) != null; ) {
            if (line.startsWith("{")) {
              JsonNode n = ClosedLoopLoad.JSON.readTree(line);
              CompletableFuture<JsonNode> f = waiting.remove(n.path("id").asLong());
              if (f != null) {
                f.complete(n);
              }
            }
          }
        } catch (IOException ignored) {
          // the client ended
        }
        IllegalStateException gone = new IllegalStateException("the client process ended (see " + log + ")");
        waiting.values().forEach(f -> f.completeExceptionally(gone));
      }, "netns-client-reader");
      reader.setDaemon(true);
      reader.start();
    }

    /** Sends a command and waits for its answer; an {@code error} answer throws. */
    JsonNode command(ObjectNode c, Duration timeout) throws Exception {
      long id = ids.incrementAndGet();
      c.put("id", id);
      CompletableFuture<JsonNode> f = new CompletableFuture<>();
      waiting.put(id, f);
      synchronized (stdin) {
        stdin.write((c + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
      }
      JsonNode n = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (n.has("error") && !c.path("op").asText().equals("http")) {
        throw new IllegalStateException(c.path("op").asText() + ": " + n.path("error").asText());
      }
      return n;
    }

    ObjectNode op(String op) {
      return ClosedLoopLoad.JSON.createObjectNode().put("op", op);
    }

    /** An HTTP call from the client's namespace; a failed call (no answer) throws. */
    Answer http(String method, String url, String token, String body) throws Exception {
      ObjectNode c = op("http").put("method", method).put("url", url).put("timeoutMs", 30_000);
      if (token != null) {
        c.put("token", token);
      }
      if (body != null) {
        c.put("body", body);
      }
      JsonNode n = command(c, Duration.ofSeconds(40));
      if (n.has("error")) {
        throw new IOException(method + " " + url + ": " + n.path("error").asText());
      }
      return new Answer(n.path("status").asInt(), n.path("body").asText(), n.path("retryAfter").asText(null));
    }

    boolean isAlive() {
      return process.isAlive();
    }

    @Override
    public void close() throws Exception {
      try {
        stdin.close(); // ends it
      } catch (IOException ignored) {
        // already gone
      }
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
  }
}
