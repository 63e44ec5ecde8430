package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.FakeCluster.Sent;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Deadlines, client disconnects and the status codes of failures reported by pools. */
class DeadlineAndFailureTest extends GatewayTestBase {

  private static final String BODY = OipRequest.fp32("input", new long[] {1, 4}, 1f, 2f, 3f, 4f).json();

  private HttpResponse<Buffer> infer(Map<String, String> headers) {
    return post("/v2/models/mlp/infer", Buffer.buffer(BODY), headers);
  }

  @Test
  void aRequestThatOutlivesItsDeadlineIs504AndIsWithdrawnFromThePool() {
    cluster.node("node-a").hold = true;
    HttpResponse<Buffer> r = infer(Map.of("kiln-timeout-ms", "300"));
    assertThat(r.statusCode()).isEqualTo(504);
    assertThat(r.bodyAsJsonObject().getString("error")).isEqualTo("deadline of 300 ms passed");
    // The 504 is written as the deadline fails the call; the withdrawal from the pool follows on the server's thread.
    await().atMost(Duration.ofSeconds(10)).until(() -> cluster.last().future().isCancelled());
  }

  /**
   * An answered request's deadline leaves its event loop's list at once, whichever of the loop's contexts (Vert.x
   * gives each HTTP request a duplicate of its own) it settles on; kept listed, each would hold its call and
   * response until its deadline.
   */
  @Test
  void answeredRequestsLeaveTheDeadlineListsAtOnce() {
    for (int i = 0; i < 20; i++) {
      assertThat(infer(Map.of()).statusCode()).isEqualTo(200);
    }
    // Well inside the 10 s default deadline, when a leaked entry would leave on its own.
    await().atMost(Duration.ofSeconds(3)).untilAsserted(() ->
        assertThat(get("/metrics").bodyAsString()).contains("kiln_deadlines_watched 0.0"));
  }

  @Test
  void aTimeoutParameterWorksLikeTheHeader() {
    cluster.node("node-a").hold = true;
    HttpResponse<Buffer> r = post("/v2/models/mlp/infer", Buffer.buffer(
        OipRequest.fp32("input", new long[] {1, 4}, 1f, 2f, 3f, 4f).parameter("timeout_ms", 250).json()), Map.of());
    assertThat(r.statusCode()).isEqualTo(504);
    assertThat(r.bodyAsJsonObject().getString("error")).contains("250 ms");
  }

  @Test
  void aRequestMayShortenItsDeadlineButNeverExtendIt() {
    infer(Map.of("kiln-timeout-ms", "1000"));
    Sent shortened = cluster.last();
    assertThat(shortened.deadlineNanos() - shortened.sentAtNanos()).isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(1000));

    infer(Map.of("kiln-timeout-ms", Long.toString(TimeUnit.DAYS.toMillis(1))));
    Sent capped = cluster.last();
    assertThat(capped.deadlineNanos() - capped.sentAtNanos()).isLessThanOrEqualTo(DEFAULT_TIMEOUT.toNanos());
    // ... and still has a sane deadline: well beyond the shortened one.
    assertThat(capped.deadlineNanos() - capped.sentAtNanos()).isGreaterThan(TimeUnit.SECONDS.toNanos(2));
  }

  @Test
  void aClientThatDisconnectsCancelsItsQueuedRequest() {
    cluster.node("node-a").hold = true;
    HttpClient client = vertx.createHttpClient();
    try {
      HttpClientRequest req = join(client.request(new RequestOptions().setMethod(HttpMethod.POST)
          .setHost(HOST).setPort(gateway.httpPort()).setURI("/v2/models/mlp/infer")));
      req.putHeader("Content-Type", "application/json").end(BODY);
      await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.sent.isEmpty());
      Sent queued = cluster.last();
      assertThat(queued.future().isDone()).isFalse();
      join(req.connection().close());
      await().atMost(Duration.ofSeconds(20)).until(() -> queued.future().isCancelled());
    } finally {
      join(client.close());
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> get("/metrics").bodyAsString()
        .contains("kiln_gateway_requests_total{code=\"499\",model=\"mlp\",outcome=\"cancelled\",protocol=\"http\"}"));
    assertThat(get("/metrics").bodyAsString()).contains("kiln_gateway_requests_in_flight 0");
  }

  @Test
  void aFullPoolQueueIs503WithThePoolsRetryAfter() {
    // Every pool refuses: the gateway re-routes once, then the pool's own answer stands.
    for (String n : java.util.List.of("node-a", "node-b", "node-c")) {
      cluster.node(n).failWith = new CapacityExceededException("queue of mlp@2 on " + n + " is full (512)",
          Duration.ofSeconds(7));
    }
    HttpResponse<Buffer> r = infer(Map.of());
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.getHeader("Retry-After")).isEqualTo("7");
    assertThat(r.bodyAsJsonObject().getString("error")).matches("queue of mlp@2 on node-[abc] is full \\(512\\)");
    assertThat(cluster.sent).hasSize(2);
  }

  @Test
  void aPoolThatRefusesForCapacityDespiteItsLoadReportIsSkippedOnce() {
    // The load report said node-a had room (reports are up to 100 ms old); it refuses: another pool serves.
    cluster.node("node-a").failWith = new CapacityExceededException("queue of mlp@2 on node-a is full (512)",
        Duration.ofSeconds(7));
    HttpResponse<Buffer> r = infer(Map.of());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(cluster.sent).hasSize(2);
    assertThat(cluster.sent.get(0).node()).isEqualTo("node-a");
    assertThat(cluster.sent.get(1).node()).isNotEqualTo("node-a");
  }

  @Test
  void aPinnedRequestIsNotReRoutedWhenItsPoolIsFull() {
    cluster.node("node-a").failWith = new CapacityExceededException("queue of mlp@2 on node-a is full (512)",
        Duration.ofSeconds(7));
    HttpResponse<Buffer> r = infer(Map.of("kiln-node", "node-a"));
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(cluster.sent).hasSize(1);
  }

  @Test
  void aDeadlineMissedInThePoolIs504() {
    cluster.node("node-a").failWith = InferenceException.deadlineExceeded("deadline passed while queued");
    HttpResponse<Buffer> r = infer(Map.of());
    assertThat(r.statusCode()).isEqualTo(504);
    assertThat(r.bodyAsJsonObject().getString("error")).isEqualTo("deadline passed while queued");
  }

  @Test
  void aModelThatIsNotReadyIs503() {
    cluster.setNotReady("mlp");
    HttpResponse<Buffer> r = infer(Map.of());
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.getHeader("Retry-After")).isEqualTo("2");
    assertThat(r.bodyAsJsonObject().getString("error")).isEqualTo("model 'mlp' version '2' is not ready");
  }

  @Test
  void aBugInAPoolIs500WithoutInternals() {
    cluster.node("node-a").failWith = new IllegalStateException("secret internal detail");
    HttpResponse<Buffer> r = infer(Map.of());
    assertThat(r.statusCode()).isEqualTo(500);
    assertThat(r.bodyAsJsonObject().getString("error")).isEqualTo("internal error");
    assertThat(r.bodyAsString()).doesNotContain("secret");
  }
}
