package io.kiln.control.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.control.support.RouterServer;
import io.kiln.pipelines.PipelineException;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.Problem;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.handler.BodyHandler;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The one way the control plane's APIs answer: the exact bytes of each shape (JSON, error, problems, 401, 503 with
 * Retry-After) as the five APIs and the logs API wrote them before they shared it.
 */
@Tag("slow")
class AnswersTest {

  static final String TOKEN = "s3cret";
  static RouterServer server;

  @BeforeAll
  static void start() {
    server = new RouterServer(r -> {
      r.get("/json").handler(ctx -> Answers.json(ctx, 201, Map.of("a", 1)));
      r.get("/error").handler(ctx -> Answers.error(ctx, 404, ctx.queryParams().get("m")));
      r.get("/problems").handler(ctx -> Answers.problems(ctx, "the job file", "nothing was started", List.of(
          new Problem("job.yaml", 3, 5, "inputs.folder", "no such folder"),
          new Problem("job.yaml", 7, 1, "output", "must be a folder"))));
      r.get("/below").handler(ctx -> Answers.belowMinimum(ctx,
          new BelowMinimumClusterSizeException("kiln.deployments", 2, 1, null)));
      r.get("/overloaded").handler(ctx -> Answers.refused(ctx,
          new PipelineException(PipelineException.Kind.OVERLOADED, "too many runs")));
      r.get("/unknown").handler(ctx -> Answers.refused(ctx,
          new PipelineException(PipelineException.Kind.NOT_FOUND, "no pipeline named 'p'")));
      r.get("/twice").handler(ctx -> {
        Answers.json(ctx, 200, Map.of("first", true));
        Answers.unavailable(ctx, 1, "too late"); // dropped: already answered
      });
      r.get("/guarded").handler(ctx -> Answers.<String>guarded(ctx, (v, e) -> {
        throw new IllegalStateException("boom");
      }).accept(null, null));
      r.route("/secret*").handler(Answers.authorize(TOKEN));
      r.get("/secret").handler(ctx -> Answers.json(ctx, 200, Map.of("ok", true)));
      r.route("/open*").handler(Answers.authorize(null));
      r.get("/open").handler(ctx -> Answers.json(ctx, 200, Map.of("ok", true)));
      r.post("/raw").handler(Answers.rawBody()).handler(BodyHandler.create(false))
          .handler(ctx -> Answers.json(ctx, 200, Map.of("body", ctx.body().asString())));
    });
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  @Test
  void aJsonAnswer() {
    HttpResponse<String> r = server.get("/json");
    assertThat(r.statusCode()).isEqualTo(201);
    assertThat(r.headers().firstValue("Content-Type")).contains("application/json");
    assertThat(r.body()).isEqualTo("{\"a\":1}");
  }

  @Test
  void anErrorIsOneFieldAndANullMessageReadsRequestFailed() {
    HttpResponse<String> r = server.get("/error?m=no%20deployment%20named%20x");
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(r.body()).isEqualTo("{\"error\":\"no deployment named x\"}");
    assertThat(server.get("/error").body()).isEqualTo("{\"error\":\"request failed\"}");
  }

  @Test
  void errorsAreTheBytesTheLogsApiWroteWithVertxJson() {
    // LogsApi wrote {"error": m} with Vert.x's JsonObject before it answered through Answers.
    for (String m : List.of("plain", "quote \" backslash \\ slash /", "tab\tnewline\ncontrol\u0001", "ünïcødé ✓ 𝄞",
        "</script><script>", "lines must be a whole number 1..10000, got '-1'")) {
      assertThat(WireCodec.toJson(Map.of("error", m))).isEqualTo(new JsonObject().put("error", m).encode());
    }
  }

  @Test
  void problemsAre400WithFileLineColumnPathMessage() {
    HttpResponse<String> r = server.get("/problems");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).isEqualTo("{\"error\":\"2 problem(s) in the job file; nothing was started\",\"problems\":["
        + "{\"file\":\"job.yaml\",\"line\":3,\"column\":5,\"path\":\"inputs.folder\",\"message\":\"no such folder\"},"
        + "{\"file\":\"job.yaml\",\"line\":7,\"column\":1,\"path\":\"output\",\"message\":\"must be a folder\"}]}");
  }

  @Test
  void aWriteBelowTheMinimumClusterSizeIs503WithRetryAfter() {
    HttpResponse<String> r = server.get("/below");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.headers().firstValue("Retry-After")).contains("5");
    assertThat(new JsonObject(r.body()).getString("error")).isNotBlank();
  }

  @Test
  void aRefusedRunOrJobAnswersItsKindsStatusWithRetryAfterOnlyFor503() {
    HttpResponse<String> full = server.get("/overloaded");
    assertThat(full.statusCode()).isEqualTo(503);
    assertThat(full.headers().firstValue("Retry-After")).contains("5");
    assertThat(full.body()).isEqualTo("{\"error\":\"too many runs\"}");
    HttpResponse<String> unknown = server.get("/unknown");
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(unknown.headers().firstValue("Retry-After")).isEmpty();
    assertThat(unknown.body()).isEqualTo("{\"error\":\"no pipeline named 'p'\"}");
  }

  @Test
  void aRequestIsAnsweredOnceAndAThrowingCallbackAnswers500() {
    HttpResponse<String> r = server.get("/twice");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Retry-After")).isEmpty();
    assertThat(r.body()).isEqualTo("{\"first\":true}");
    HttpResponse<String> g = server.get("/guarded");
    assertThat(g.statusCode()).isEqualTo(500);
    assertThat(g.body()).isEqualTo("{\"error\":\"request failed: java.lang.IllegalStateException: boom\"}");
  }

  @Test
  void withoutTheTokenIs401WithWwwAuthenticate() {
    for (String[] headers : List.of(new String[0], new String[] {"Authorization", "Bearer wrong"},
        new String[] {"Authorization", TOKEN})) {
      HttpResponse<String> r = server.get("/secret", headers);
      assertThat(r.statusCode()).isEqualTo(401);
      assertThat(r.headers().firstValue("WWW-Authenticate")).contains("Bearer");
      assertThat(r.headers().firstValue("Content-Type")).contains("application/json");
      assertThat(r.body())
          .isEqualTo("{\"error\":\"management API needs a valid token (Authorization: Bearer ...)\"}");
    }
    assertThat(server.get("/secret", "Authorization", "Bearer " + TOKEN).statusCode()).isEqualTo(200);
    assertThat(server.get("/open").statusCode()).as("no token configured").isEqualTo(200);
  }

  @Test
  void aYamlBodyLabelledAFormIsKeptWhole() {
    // Parsed as a form, a value longer than the server's form-attribute limit (8 KiB) would fail the request.
    String yaml = "a: b=c&d\nkey: " + "x".repeat(20_000) + "\n";
    HttpResponse<String> r = server.send(HttpRequest.newBuilder(server.uri("/raw"))
        .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(yaml)));
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(new JsonObject(r.body()).getString("body")).isEqualTo(yaml);
  }
}
