package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.FakeCluster.Sent;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.RequestContext;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * generate and generate_stream hand the pool the same request context as infer: the client's trace, its deadline,
 * and the exchange's cancellation, which the client going away cancels: the one way a stream is withdrawn.
 */
class GenerateContextTest extends GatewayTestBase {

  private static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  private static final String TRACEPARENT = "00-" + TRACE + "-00f067aa0ba902b7-01";
  private static final String STREAMING = "streamer";
  private static final String BODY = "{\"id\": \"g-1\", \"input\": [1, 2, 3, 4]}";

  @BeforeEach
  void addStreamingModel() {
    cluster.addModel(new ModelInfo(STREAMING, "1", List.of("1"), "builtin",
        new ModelSignature(List.of(TestModels.spec("input", DataType.FP32, -1, 4)),
            List.of(TestModels.spec("output", DataType.FP32, -1, 4)), true), true, 8));
  }

  private HttpResponse<Buffer> generate(String model, String endpoint) {
    return post("/v2/models/" + model + "/" + endpoint, Buffer.buffer(BODY),
        Map.of("traceparent", TRACEPARENT, "Content-Type", "application/json"));
  }

  @Test
  void aStreamingModelsGenerateCarriesTheTraceToThePool() {
    for (String endpoint : List.of("generate", "generate_stream")) {
      HttpResponse<Buffer> r = generate(STREAMING, endpoint);
      assertThat(r.statusCode()).as(endpoint).isEqualTo(200);
      RequestContext context = cluster.last().context();
      assertThat(context.trace()).as(endpoint + " is traced like infer").isNotNull();
      assertThat(context.traceId()).isEqualTo(TRACE);
      assertThat(context.requestId()).isEqualTo("g-1");
      assertThat(context.cancellation().cancellable()).as("the exchange is the stream's token").isTrue();
    }
  }

  @Test
  void aModelThatDoesNotStreamIsTracedThroughGenerateToo() {
    HttpResponse<Buffer> r = generate(TestModels.MLP, "generate");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(cluster.last().context().traceId()).isEqualTo(TRACE);
  }

  private double streamsInFlight() {
    return registry.get("kiln.gateway.streams.in.flight").gauge().value();
  }

  @Test
  void aClientThatGoesAwayCancelsTheStreamsTokenWhichFreesItsPlaceUnderTheStreamLimit() {
    cluster.node("node-a").hold = true;
    HttpClient client = vertx.createHttpClient();
    try {
      HttpClientRequest req = join(client.request(new RequestOptions().setMethod(HttpMethod.POST)
          .setHost(HOST).setPort(gateway.httpPort()).setURI("/v2/models/" + STREAMING + "/generate_stream")));
      req.putHeader("Content-Type", "application/json").end(BODY);
      await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.sent.isEmpty());
      Sent open = cluster.last();
      assertThat(open.context().cancellation().isCancelled()).isFalse();
      assertThat(streamsInFlight()).as("the held stream takes a place").isEqualTo(1);
      join(req.connection().close());
      await().atMost(Duration.ofSeconds(20)).until(() -> open.context().cancellation().isCancelled());
      assertThat(open.context().cancellation().reason()).isEqualTo("client went away");
      // The pool never answers (held): only the token's cancel can give the place back.
      await().atMost(Duration.ofSeconds(20)).until(() -> streamsInFlight() == 0);
    } finally {
      join(client.close());
    }
  }
}
