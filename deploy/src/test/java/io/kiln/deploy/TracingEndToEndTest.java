package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.WarmupOptions;
import io.kiln.pools.trace.Spans;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelStreamInferResponse;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * W3C trace context through a real node (gateway → pool manager → worker, builtin identity model) with spans
 * exported by the OpenTelemetry SDK to a real OTLP/HTTP receiver ({@link OtlpReceiver}); and a node without an
 * endpoint, which exports nothing and carries an incoming traceparent as it came.
 */
@Tag("slow")
class TracingEndToEndTest {

  static final Duration WAIT = Duration.ofSeconds(60);
  static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String PARENT = "00f067aa0ba902b7";
  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
          pool:
            workers_per_node: 1
      """;
  static final String BODY = OipRequest.fp32("x", new long[] {1, 4}, 1, 2, 3, 4).id("req-7").json();

  static OtlpReceiver receiver;
  static KilnNode traced;
  static KilnNode untraced;
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() {
    receiver = new OtlpReceiver();
    traced = startNode("traced", receiver.endpoint());
    untraced = startNode("untraced", null);
  }

  private static KilnNode startNode(String id, String endpoint) {
    KilnNode n = KilnNode.start(new KilnNode.Options(new NodeOptions(id, "127.0.0.1", Resources.cpu(2), Map.of()), null,
        0, 0, null, Duration.ofSeconds(30), null, WarmupOptions.OFF, null, endpoint)).toCompletableFuture().join();
    n.serve().apply(YAML, Path.of("echo.yaml"), false).toCompletableFuture().join();
    await().atMost(WAIT).until(() -> {
      DeploymentStatus s = n.serve().statuses().get("echo");
      return s != null && s.phase() == DeploymentStatus.Phase.READY;
    });
    return n;
  }

  @AfterAll
  static void stop() {
    for (KilnNode n : new KilnNode[] {traced, untraced}) {
      if (n != null) {
        n.close();
      }
    }
    if (receiver != null) {
      receiver.close();
    }
  }

  static HttpResponse<String> infer(KilnNode node, String traceparent, String tracestate) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort()
        + "/v2/models/echo/infer")).timeout(WAIT).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(BODY));
    if (traceparent != null) {
      b.header("traceparent", traceparent);
    }
    if (tracestate != null) {
      b.header("tracestate", tracestate);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The gRPC form of {@link #BODY}'s tensor, with {@code id}. */
  static ModelInferRequest echoRequest(String id) {
    return ModelInferRequest.newBuilder().setModelName("echo").setId(id)
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("x").setDatatype("FP32").addShape(1)
            .addShape(4).setContents(io.kiln.protocol.grpc.InferTensorContents.newBuilder()
                .addFp32Contents(1).addFp32Contents(2).addFp32Contents(3).addFp32Contents(4)))
        .build();
  }

  static OtlpReceiver.Received one(List<OtlpReceiver.Received> spans, String name) {
    List<OtlpReceiver.Received> named = spans.stream().filter(s -> s.name().equals(name)).toList();
    assertThat(named).as(name + " in " + spans).hasSize(1);
    return named.get(0);
  }

  /** The three spans of one request: the gateway's under {@code parent}, the queue's and the batch's under it. */
  static OtlpReceiver.Received assertRequestSpans(String traceId, String parent, String node) {
    await().atMost(WAIT).until(() -> receiver.spans(traceId).size() >= 3);
    List<OtlpReceiver.Received> spans = receiver.spans(traceId);
    OtlpReceiver.Received gateway = one(spans, "kiln.gateway.request");
    OtlpReceiver.Received queue = one(spans, "kiln.pool.queue");
    OtlpReceiver.Received batch = one(spans, "kiln.worker.batch");
    assertThat(gateway.parentSpanId()).isEqualTo(parent);
    assertThat(gateway.kind()).isEqualTo(2); // SERVER
    assertThat(gateway.attributes()).containsEntry("kiln.model", "echo").containsEntry("kiln.outcome", "ok");
    assertThat(queue.parentSpanId()).isEqualTo(gateway.spanId());
    assertThat(batch.parentSpanId()).isEqualTo(gateway.spanId());
    assertThat(batch.attributes()).containsEntry("kiln.batch.size", "1")
        .containsEntry("kiln.worker", "kiln/pool/echo@1/" + node + "/worker-0");
    assertThat(spans).allSatisfy(s -> {
      assertThat(s.service()).isEqualTo("kiln");
      assertThat(s.serviceInstance()).isEqualTo(node);
    });
    return gateway;
  }

  @Test
  void anIncomingTraceparentIsContinuedThroughGatewayPoolAndWorker() throws Exception {
    HttpResponse<String> r = infer(traced, "00-" + TRACE + "-" + PARENT + "-01", "congo=t61rcWkgMzE");

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    OtlpReceiver.Received gateway = assertRequestSpans(TRACE, PARENT, "traced");
    assertThat(gateway.traceState()).isEqualTo("congo=t61rcWkgMzE");
    // The answer names the gateway's span, so that the client's next span can follow it.
    assertThat(r.headers().firstValue("traceparent")).hasValue("00-" + TRACE + "-" + gateway.spanId() + "-01");
  }

  @Test
  void aRequestWithoutTraceparentStartsATrace() throws Exception {
    HttpResponse<String> r = infer(traced, null, null);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    String header = r.headers().firstValue("traceparent").orElseThrow();
    String traceId = header.substring(3, 35);
    OtlpReceiver.Received gateway = assertRequestSpans(traceId, "", "traced");
    assertThat(header).isEqualTo("00-" + traceId + "-" + gateway.spanId() + "-01");
  }

  @Test
  void aMalformedTraceparentIsIgnoredAndANewTraceStarts() throws Exception {
    for (String bad : List.of("00-not-a-trace-01", "00-" + TRACE.toUpperCase() + "-" + PARENT + "-01",
        "00-00000000000000000000000000000000-" + PARENT + "-01", "x".repeat(4000))) {
      HttpResponse<String> r = infer(traced, bad, "k=v");

      assertThat(r.statusCode()).as(bad + ": " + r.body()).isEqualTo(200);
      String traceId = r.headers().firstValue("traceparent").orElseThrow().substring(3, 35);
      assertThat(traceId).isNotEqualTo(TRACE).isNotEqualTo("0".repeat(32));
      OtlpReceiver.Received gateway = assertRequestSpans(traceId, "", "traced");
      assertThat(gateway.traceState()).isEmpty(); // a new trace takes no stranger's state
    }
  }

  @Test
  void grpcMetadataCarriesTheTraceparentToo() throws Exception {
    String trace = "0af7651916cd43dd8448eb211c80319c";
    Vertx vertx = Vertx.vertx();
    GrpcClient client = GrpcClient.client(vertx);
    try {
      ModelInferRequest msg = echoRequest("grpc-1");
      GrpcClientResponse<ModelInferRequest, ModelInferResponse> resp = client
          .request(SocketAddress.inetSocketAddress(traced.grpcPort(), "127.0.0.1"),
              GRPCInferenceServiceGrpcClient.ModelInfer)
          .compose(req -> {
            req.headers().set("traceparent", "00-" + trace + "-b7ad6b7169203331-01");
            return req.end(msg).compose(v -> req.response());
          }).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
      ModelInferResponse answer = resp.last().toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);

      assertThat(answer.getId()).isEqualTo("grpc-1");
      OtlpReceiver.Received gateway = assertRequestSpans(trace, "b7ad6b7169203331", "traced");
      assertThat(gateway.attributes()).containsEntry("kiln.protocol", "grpc");
      assertThat(resp.headers().get("traceparent")).isEqualTo("00-" + trace + "-" + gateway.spanId() + "-01");
    } finally {
      client.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void everyRequestOfAModelStreamInferCallIsTracedUnderTheCallsTraceparent() throws Exception {
    String trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    Vertx vertx = Vertx.vertx();
    GrpcClient client = GrpcClient.client(vertx);
    try {
      ModelInferRequest msg = echoRequest("stream-1");
      List<ModelStreamInferResponse> got = new java.util.concurrent.CopyOnWriteArrayList<>();
      client.request(SocketAddress.inetSocketAddress(traced.grpcPort(), "127.0.0.1"),
              GRPCInferenceServiceGrpcClient.ModelStreamInfer)
          .compose(req -> {
            req.headers().set("traceparent", "00-" + trace + "-c7ad6b7169203332-01");
            return req.end(msg).compose(v -> req.response());
          })
          .compose(resp -> resp.handler(got::add).end())
          .toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);

      assertThat(got).hasSize(1);
      assertThat(got.get(0).getErrorMessage()).isEmpty();
      assertThat(got.get(0).getInferResponse().getId()).isEqualTo("stream-1");
      OtlpReceiver.Received gateway = assertRequestSpans(trace, "c7ad6b7169203332", "traced");
      assertThat(gateway.attributes()).containsEntry("kiln.protocol", "grpc-stream");
    } finally {
      client.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aNodeWithoutAnEndpointExportsNothingAndCarriesTheTraceparentAsItCame() throws Exception {
    String trace = "11111111111111111111111111111111";
    String header = "00-" + trace + "-2222222222222222-01";

    HttpResponse<String> r = infer(untraced, header, null);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.headers().firstValue("traceparent")).hasValue(header);
    assertThat(untraced.runtime().localService(Spans.class)).isEmpty();
    // A malformed one is ignored there: nothing carried, nothing answered.
    assertThat(infer(untraced, "garbage", null).headers().firstValue("traceparent")).isEmpty();
    assertThat(infer(untraced, null, null).headers().firstValue("traceparent")).isEmpty();
    // The traced node's receiver is the only one there is: it never hears of this trace.
    await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10))
        .until(() -> receiver.spans(trace).isEmpty());
  }
}
