package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LLM runs end to end against a loopback server speaking the OpenAI streaming framing with known timing: the first
 * token 50 ms after the request, then one every 10 ms, exactly {@code max_tokens} of them, a usage chunk, [DONE].
 * Model "broken" streams two tokens and then an error event; model "hang" one token and then nothing. A request with {@code stream: false} gets the whole
 * answer as one JSON body when its last token would have been streamed.
 */
class LlmRunTest {
  private static final long FIRST_MS = 50;
  private static final long EVERY_MS = 10;

  private static TestServer server;
  private static LoadRunner runner;

  @BeforeAll
  static void start() {
    server = TestServer.start(vertx -> (Handler<HttpServerRequest>) req -> req.body().onSuccess(body -> {
      io.vertx.core.json.JsonObject r = body.toJsonObject();
      boolean chat = req.path().equals("/v1/chat/completions");
      int tokens = r.getInteger("max_tokens");
      boolean broken = r.getString("model").equals("broken");
      if (!r.getBoolean("stream", false)) {
        vertx.setTimer(FIRST_MS + EVERY_MS * (tokens - 1), done -> req.response()
            .putHeader("content-type", "application/json")
            .end("{\"choices\":[{\"index\":0,\"text\":\"" + "t".repeat(tokens) + "\",\"finish_reason\":\"length\"}],"
                + "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" + tokens + ",\"total_tokens\":"
                + (tokens + 3) + "}}"));
        return;
      }
      HttpServerResponse resp = req.response().setChunked(true).putHeader("content-type", "text/event-stream");
      resp.writeHead();
      if (r.getString("model").equals("hang")) { // one token, then never a word more nor an end
        resp.write("data: {\"choices\":[{\"index\":0,\"text\":\"t\"}],\"usage\":null}\n\n");
        return;
      }
      int[] sent = {0};
      vertx.setTimer(FIRST_MS, first -> {
        Handler<Long> tick = new Handler<>() {
          @Override
          public void handle(Long id) {
            if (broken && sent[0] == 2) {
              resp.end("data: {\"error\":{\"message\":\"the model failed\",\"type\":\"server_error\"}}\n\n");
              return;
            }
            String text = "t" + sent[0];
            String chunk = chat ? "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + text + "\"}}],\"usage\":null}"
                : "{\"choices\":[{\"index\":0,\"text\":\"" + text + "\"}],\"usage\":null}";
            // The event's blank line in a write of its own: events arrive split, as they may on the wire.
            resp.write("data: " + chunk + "\n");
            resp.write("\n");
            if (++sent[0] < tokens) {
              vertx.setTimer(EVERY_MS, this);
            } else {
              resp.write("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" + tokens
                  + ",\"total_tokens\":" + (tokens + 3) + "}}\n\n");
              resp.end("data: [DONE]\n\n");
            }
          }
        };
        tick.handle(first);
      });
    }));
    runner = LoadRunner.create(1);
  }

  @AfterAll
  static void stop() {
    runner.close();
    server.close();
  }

  private LoadOptions.Builder options(LlmWorkload w) {
    return LoadOptions.builder().target("http://127.0.0.1:" + server.port).model(w.model()).source(w)
        .warmup(Duration.ofMillis(300)).duration(Duration.ofSeconds(2)).requestTimeout(Duration.ofSeconds(10));
  }

  @Test
  void closedLoopMeasuresTimeToFirstTokenAndInterTokenLatency() {
    LlmWorkload w = LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "tiny-gpt", 16, 8);
    RunResult r = runner.run(options(w).mode(LoadMode.CLOSED).connections(4).build(), ProgressListener.NONE);

    assertThat(r.errors()).as("%s %s", r.outcomes(), r.examples()).isZero();
    RunResult.Llm llm = r.llm();
    assertThat(llm).isNotNull();
    assertThat(llm.api()).isEqualTo("completions");
    assertThat(llm.requests()).isEqualTo(r.ok()).isGreaterThanOrEqualTo(8);
    assertThat(llm.outputTokens()).isEqualTo(8 * llm.requests()); // exact: max_tokens each
    assertThat(llm.ttftMs().count()).isEqualTo(llm.requests());
    assertThat(llm.itlMs().count()).isEqualTo(7 * llm.requests());
    // Timers are not exact and the box is shared: generous bounds, but on the right side of the facts.
    assertThat(llm.ttftMs().p50()).isBetween(45.0, 150.0);
    assertThat(llm.itlMs().p50()).isBetween(7.0, 40.0);
    assertThat(llm.e2eMs().p50()).isBetween(115.0, 400.0);
    assertThat(llm.outputTokensPerSecond()).isPositive();
    assertThat(r.config()).containsKey("llm");
  }

  @Test
  void openLoopChatFromTheCommandLineWritesTheFiguresAndCountsFailedStreams(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("chat.json");
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    int code = LoadGen.run(new String[] {"--llm", "chat", "--url", "http://127.0.0.1:" + server.port, "--model",
        "tiny-gpt", "--mode", "open", "--rate", "20", "--warmup", "300ms", "--duration", "2s", "--prompt-words", "10",
        "--output-tokens", "5", "--prefixes", "2", "--prefix-words", "8", "--quiet", "--out", out.toString()},
        new PrintStream(text, true, StandardCharsets.UTF_8), System.err);
    assertThat(code).isZero();
    String summary = text.toString(StandardCharsets.UTF_8);
    assertThat(summary).contains("llm (chat):").contains("ttft (ms): p50").contains("itl  (ms): p50");

    RunResult r = Reports.readJson(out);
    assertThat(r.errors()).as("%s %s", r.outcomes(), r.examples()).isZero();
    assertThat(r.requests()).isBetween(30L, 50L); // 20/s for 2 s: 40
    assertThat(r.llm().outputTokens()).isEqualTo(5 * r.llm().requests());
    assertThat(r.llm().ttftMs().p50()).isBetween(45.0, 150.0);
    assertThat(r.llm().itlMs().p50()).isBetween(7.0, 40.0);
    assertThat(Files.readString(Reports.htmlBeside(out))).contains("Generation (chat)").contains("time to first token");

    LlmWorkload broken = LlmWorkload.of(LlmWorkload.Api.CHAT, "broken", 4, 5);
    RunResult failed = runner.run(options(broken).mode(LoadMode.CLOSED).connections(2).duration(Duration.ofMillis(500))
        .build(), ProgressListener.NONE);
    assertThat(failed.ok()).isZero();
    assertThat(failed.count("stream_error")).isEqualTo(failed.requests()).isPositive();
    assertThat(failed.examples().get("stream_error")).containsKey("error event: the model failed");
    assertThat(failed.llm().requests()).isZero();
  }

  @Test
  void aStreamNotEndedWithinTheRequestTimeoutIsATimeout() {
    LlmWorkload hang = LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "hang", 4, 5);
    RunResult r = runner.run(options(hang).mode(LoadMode.CLOSED).connections(2).warmup(Duration.ZERO)
        .maxRequests(4).requestTimeout(Duration.ofMillis(400)).build(), ProgressListener.NONE);
    assertThat(r.outcomes()).containsOnly(java.util.Map.entry("timeout", 4L));
    assertThat(r.examples().get("timeout")).containsOnlyKeys("stream not ended within 400 ms");
  }

  @Test
  void aWorkloadThatDoesNotStreamCountsTheUsageTokensAndTimesTheWholeAnswer(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("whole.json");
    int code = LoadGen.run(new String[] {"--llm", "completions", "--url", "http://127.0.0.1:" + server.port, "--model",
        "tiny-gpt", "--connections", "2", "--warmup", "300ms", "--duration", "2s", "--prompt-words", "10",
        "--output-tokens", "6", "--no-stream", "--quiet", "--out", out.toString()},
        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), System.err);
    assertThat(code).isZero();
    RunResult r = Reports.readJson(out);
    assertThat(r.errors()).as("%s %s", r.outcomes(), r.examples()).isZero();
    assertThat(r.llm().requests()).isEqualTo(r.ok()).isGreaterThanOrEqualTo(4);
    assertThat(r.llm().outputTokens()).isEqualTo(6 * r.llm().requests());
    // One chunk: no inter-token gaps; its first token is its whole answer (50 ms + 5 x 10 ms on the server).
    assertThat(r.llm().itlMs().count()).isZero();
    assertThat(r.llm().ttftMs().p50()).isBetween(95.0, 5_000.0); // the upper bound catches a wrong unit only
    assertThat(r.config().get("llm").toString()).contains("stream=false");
  }

  @Test
  void prefixPairsTimeBothRequestsOfEveryPairAndReadTheirPromptTokens() throws Exception {
    LlmWorkload w = new LlmWorkload(LlmWorkload.Api.COMPLETIONS, "tiny-gpt", 4, 0, 3, 0, 1, 20, 5);
    LlmPrefixPairs.Result r = LlmPrefixPairs.measure(java.net.URI.create("http://127.0.0.1:" + server.port), w, 3,
        Duration.ofSeconds(10));
    assertThat(r.errors()).isZero();
    // Each request takes the stand-in's 50 ms and more; the upper bound only catches a wrong unit (microseconds, or
    // the whole run), not a slow machine: a first request on two loaded cores took 325 ms.
    assertThat(r.pairs()).hasSize(3).allSatisfy(p -> {
      assertThat(p.firstMs()).isBetween(45.0, 5_000.0);
      assertThat(p.secondMs()).isBetween(45.0, 5_000.0);
      assertThat(p.firstPromptTokens()).isEqualTo(3);
    });
    double[] ratios = r.pairs().stream().mapToDouble(p -> p.secondMs() / p.firstMs()).sorted().toArray();
    assertThat(r.ratioP50()).isEqualTo(ratios[1]);
    assertThat(r.firstP50Ms()).isEqualTo(r.pairs().stream().mapToDouble(LlmPrefixPairs.Pair::firstMs).sorted()
        .toArray()[1]);
    LlmPrefixPairs.Result failed = LlmPrefixPairs.measure(java.net.URI.create("http://127.0.0.1:" + server.port),
        new LlmWorkload(LlmWorkload.Api.COMPLETIONS, "broken", 4, 0, 3, 0, 1, 20, 5), 1, Duration.ofSeconds(10));
    assertThat(failed.errors()).isEqualTo(2);
    assertThat(failed.firstP50Ms()).isNaN();

    long start = System.nanoTime();
    LlmPrefixPairs.Result hung = LlmPrefixPairs.measure(java.net.URI.create("http://127.0.0.1:" + server.port),
        new LlmWorkload(LlmWorkload.Api.COMPLETIONS, "hang", 4, 0, 3, 0, 1, 20, 5), 1, Duration.ofMillis(500));
    assertThat(hung.errors()).as("a stream that never ends is given up at the timeout").isEqualTo(2);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
  }
}
