package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpServerRequest;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The generator driven from code, as reliability tests drive it: requests made per index, answers judged by body,
 * several targets, runs watched and ended while they go — against real loopback servers that count what they got.
 */
class LiveRunTest {

  private static LoadRunner runner;

  @BeforeAll
  static void start() {
    runner = LoadRunner.create(1);
  }

  @AfterAll
  static void stop() {
    runner.close();
  }

  /** Echoes the body; refuses (503 + Retry-After) a body that is a multiple of {@code refuseEvery}; counts bodies. */
  private static Handler<HttpServerRequest> echo(AtomicInteger received, int refuseEvery) {
    return req -> req.body().onSuccess(body -> {
      received.incrementAndGet();
      long v = Long.parseLong(body.toString());
      if (refuseEvery > 0 && v % refuseEvery == 0) {
        req.response().setStatusCode(503).putHeader("Retry-After", "1").end("{\"error\":\"busy\"}");
      } else {
        req.response().end("{\"echo\":" + v + "}");
      }
    });
  }

  private static HttpCall call(long i) {
    return new HttpCall("/echo", Long.toString(i).getBytes(StandardCharsets.UTF_8), null);
  }

  /** Success only when the answer echoes the request's own value. */
  private static ResponseCheck.Verdict judge(long i, int status, io.vertx.core.MultiMap headers,
      io.vertx.core.buffer.Buffer body) {
    if (status == 200) {
      return body.toString().equals("{\"echo\":" + i + "}") ? ResponseCheck.Verdict.ok("ok")
          : ResponseCheck.Verdict.failed("wrong", "200 with another body");
    }
    return ResponseCheck.Verdict.failed(headers.contains("Retry-After") ? "refused" : "lost", status + " "
        + body);
  }

  private static URI uri(TestServer s) {
    return URI.create("http://127.0.0.1:" + s.port);
  }

  @Test
  void requestsMadePerIndexGoRoundRobinAndEachAnswerIsJudgedByItsBody() {
    AtomicInteger a = new AtomicInteger();
    AtomicInteger b = new AtomicInteger();
    try (TestServer first = TestServer.start(v -> echo(a, 0)); TestServer second = TestServer.start(v -> echo(b, 5))) {
      RunResult r = runner.run(LoadOptions.builder().name("judged").targets(List.of(uri(first), uri(second)))
          .source(LiveRunTest::call).check(LiveRunTest::judge).connections(4).warmup(Duration.ZERO)
          .duration(Duration.ofSeconds(30)).maxRequests(200).build(), ProgressListener.NONE);

      // Request i went to server i % 2; the second refuses multiples of 5: the odd ones, 5, 15, ..., 195.
      assertThat(r.requests()).isEqualTo(200);
      assertThat(r.outcomes()).containsOnly(java.util.Map.entry("ok", 180L), java.util.Map.entry("refused", 20L));
      assertThat(a.get()).as("no priming request: a run with a source sends its own requests only").isEqualTo(100);
      assertThat(b.get()).isEqualTo(100);
      assertThat(r.examples()).containsOnlyKeys("refused");
      assertThat(r.examples().get("refused")).containsExactly(java.util.Map.entry("503 {\"error\":\"busy\"}", 20L));
      assertThat(r.latencyByOutcome()).containsOnlyKeys("ok", "refused");
      assertThat(r.latencyByOutcome().get("ok").count()).isEqualTo(180);
      assertThat(r.ok()).isEqualTo(180);
    }
  }

  @Test
  void aStartedClosedLoopRunsUntilFinishedAndSendsNothingAfterIt() {
    AtomicInteger received = new AtomicInteger();
    try (TestServer server = TestServer.start(v -> echo(received, 0))) {
      LiveRun run = runner.start(LoadOptions.builder().name("live").target(uri(server)).source(LiveRunTest::call)
          .check(LiveRunTest::judge).connections(3).warmup(Duration.ZERO).duration(Duration.ofHours(1)).build());
      await().atMost(Duration.ofSeconds(30)).until(() -> run.snapshot().count("ok") >= 300);
      RunResult r = run.finish();

      assertThat(r.outcomes()).containsOnlyKeys("ok");
      assertThat(r.requests()).isGreaterThanOrEqualTo(300).isEqualTo(received.get());
      assertThat(run.snapshot().inFlight()).isZero();
      assertThat(run.snapshot().issued()).isEqualTo(r.requests());
    }
  }

  @Test
  void aStartedOpenLoopEndsWhenStoppedWithEveryRequestItSentAnswered() {
    AtomicInteger received = new AtomicInteger();
    try (TestServer server = TestServer.start(v -> echo(received, 0))) {
      LiveRun run = runner.start(LoadOptions.builder().name("open-live").target(uri(server)).mode(LoadMode.OPEN)
          .rate(200).source(LiveRunTest::call).check(LiveRunTest::judge).connections(8).warmup(Duration.ZERO)
          .duration(Duration.ofHours(1)).build());
      await().atMost(Duration.ofSeconds(30)).until(() -> run.snapshot().count("ok") >= 40);
      RunResult r = run.finish();

      assertThat(r.outcomes()).as("nothing due and unsent is left: a stopped open loop ends").containsOnlyKeys("ok");
      assertThat(r.requests()).isGreaterThanOrEqualTo(40).isEqualTo(received.get());
      assertThat(r.offeredRps()).isEqualTo(200.0);
    }
  }

  @Test
  void aRequestUnansweredWithinTheTimeoutIsATimeoutAndTheRunGoesOn() {
    AtomicInteger received = new AtomicInteger();
    // Never answers "0" (the request is held until the server closes); everything else at once.
    try (TestServer server = TestServer.start(vertx -> req -> req.body().onSuccess(body -> {
      received.incrementAndGet();
      if (Long.parseLong(body.toString()) != 0) {
        req.response().end("{\"echo\":" + body + "}");
      }
    }))) {
      // A first run, every request answered, loads the client's and the server's code: a cold JVM's first answers
      // on two busy cores took over the timeout once (a second "timeout" in a clean clone's suite).
      RunResult warm = runner.run(LoadOptions.builder().name("warm").target(uri(server)).source(i -> call(i + 1))
          .connections(2).warmup(Duration.ZERO).duration(Duration.ofSeconds(30)).maxRequests(20)
          .requestTimeout(Duration.ofSeconds(30)).build(), ProgressListener.NONE);
      assertThat(warm.requests()).isEqualTo(20);
      received.set(0);

      RunResult r = runner.run(LoadOptions.builder().name("timeout").target(uri(server)).source(LiveRunTest::call)
          .check(LiveRunTest::judge).connections(2).warmup(Duration.ZERO).duration(Duration.ofSeconds(30))
          .maxRequests(20).requestTimeout(Duration.ofSeconds(2)).build(), ProgressListener.NONE);

      assertThat(r.outcomes()).as("outcomes, with their latencies %s", r.latencyByOutcome())
          .containsOnly(java.util.Map.entry("ok", 19L), java.util.Map.entry("timeout", 1L));
      assertThat(r.examples().get("timeout")).containsOnlyKeys("no answer within 2000 ms");
      assertThat(r.latencyByOutcome().get("timeout").p50()).isGreaterThanOrEqualTo(2000.0);
      assertThat(received.get()).isEqualTo(20);
    }
  }

  @Test
  void aRunWithTheMixAndACheckSendsTheMixToTheModelsInferPath() {
    AtomicInteger received = new AtomicInteger();
    try (TestServer server = TestServer.start(v -> req -> req.body().onSuccess(body -> {
      received.incrementAndGet();
      boolean right = req.path().equals("/v2/models/mlp/infer") && body.toString().contains("\"FP32\"");
      req.response().setStatusCode(right ? 200 : 400).end(right ? "{\"outputs\":[]}" : "{\"error\":\"wrong\"}");
    }))) {
      RunResult r = runner.run(LoadOptions.builder().name("mix").target(uri(server)).warmup(Duration.ZERO)
          .duration(Duration.ofSeconds(30)).maxRequests(10).check((i, status, h, body) -> status == 200
              && body.toString().contains("outputs") ? ResponseCheck.Verdict.ok("answered")
              : ResponseCheck.Verdict.failed("refused", body.toString())).build(), ProgressListener.NONE);

      assertThat(r.outcomes()).containsOnly(java.util.Map.entry("answered", 10L));
      assertThat(received.get()).as("ten measured and one priming request").isEqualTo(11);
    }
  }
}
