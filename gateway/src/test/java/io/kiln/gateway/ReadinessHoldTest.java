package io.kiln.gateway;

import static io.kiln.gateway.support.GatewayTestBase.join;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.gateway.spi.DataLocator;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.gateway.support.FakeCluster;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelReadyRequest;
import io.kiln.protocol.grpc.ServerReadyRequest;
import io.kiln.testkit.OipRequest;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.grpc.client.GrpcClient;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A readiness hold keeps the server and its models not ready while the directory's internal model still
 * serves, unrecorded in the request meters; releasing every hold makes them ready.
 */
class ReadinessHoldTest {

  private static final String HOST = "127.0.0.1";
  private static final String INTERNAL = "_warm";
  private static final String BODY = OipRequest.fp32("input", new long[] {1, 4}, 1, 2, 3, 4).json();

  private Vertx vertx;
  private PrometheusMeterRegistry registry;
  private KilnGateway gateway;
  private WebClient http;
  private GrpcClient grpcClient;
  private GRPCInferenceServiceGrpcClient grpc;

  /** The test cluster's mlp, and an internal copy of it that the directory never lists. */
  private static final class Directory implements ModelDirectory {
    final FakeCluster cluster;

    Directory() {
      ModelInfo mlp = TestModels.all().get(1);
      ModelInfo internal = new ModelInfo(INTERNAL, "1", List.of("1"), "kiln_builtin", mlp.signature(), true, 0);
      cluster = new FakeCluster(List.of(mlp, internal));
      cluster.addNode("node-a", true);
    }

    @Override
    public List<ModelInfo> models() {
      return cluster.models().stream().filter(m -> !internal(m.name())).toList();
    }

    @Override
    public Optional<ModelInfo> model(String name, String versionOrNull) {
      return cluster.model(name, versionOrNull);
    }

    @Override
    public boolean internal(String name) {
      return name.equals(INTERNAL);
    }
  }

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Directory directory = new Directory();
    gateway = new KilnGateway(GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0).bindJvmMetrics(false)
        .registry(registry).build(), directory, directory.cluster, DataLocator.NONE);
    http = WebClient.create(vertx);
    grpcClient = GrpcClient.client(vertx);
  }

  private void listen() {
    join(gateway.start(vertx));
    grpc = GRPCInferenceServiceGrpcClient.create(grpcClient, SocketAddress.inetSocketAddress(gateway.grpcPort(), HOST));
  }

  @AfterEach
  void stop() {
    join(gateway.close());
    join(vertx.close());
  }

  private HttpResponse<Buffer> get(String path) {
    return join(http.get(gateway.httpPort(), HOST, path).send());
  }

  private HttpResponse<Buffer> infer(String model) {
    return join(http.post(gateway.httpPort(), HOST, "/v2/models/" + model + "/infer")
        .putHeader("Content-Type", "application/json").sendBuffer(Buffer.buffer(BODY)));
  }

  private boolean grpcServerReady() {
    return join(grpc.serverReady(ServerReadyRequest.getDefaultInstance())).getReady();
  }

  private boolean grpcModelReady(String model) {
    return join(grpc.modelReady(ModelReadyRequest.newBuilder().setName(model).build())).getReady();
  }

  private double requestsRecorded(String model) {
    return registry.find("kiln.gateway.requests").tag("model", model).counters().stream()
        .mapToDouble(Counter::count).sum();
  }

  @Test
  void aHoldTakenBeforeStartKeepsServerAndModelsNotReadyButTheInternalModelServesUnrecorded() {
    ReadinessHold hold = gateway.holdReadiness("warming up the serving path");
    listen();

    HttpResponse<Buffer> server = get("/v2/health/ready");
    assertThat(server.statusCode()).isEqualTo(503);
    assertThat(server.bodyAsJsonObject().getString("error")).isEqualTo("server not ready: warming up the serving path");
    assertThat(grpcServerReady()).isFalse();
    assertThat(get("/v2/models/mlp/ready").statusCode()).isEqualTo(503);
    assertThat(grpcModelReady("mlp")).isFalse();
    HttpResponse<Buffer> refused = infer("mlp");
    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.bodyAsJsonObject().getString("error")).contains("not ready", "warming up the serving path");

    // The internal model serves over both protocols all along, and its requests leave no trace in the meters.
    assertThat(get("/v2/models/" + INTERNAL + "/ready").statusCode()).isEqualTo(200);
    assertThat(infer(INTERNAL).statusCode()).isEqualTo(200);
    ModelInferRequest raw = ModelInferRequest.newBuilder().setModelName(INTERNAL)
        .addInputs(InferInputTensor.newBuilder().setName("input").setDatatype(DataType.FP32.name()).addShape(1).addShape(4))
        .addRawInputContents(ByteString.copyFrom(new byte[16])).build();
    assertThat(join(grpc.modelInfer(raw)).getOutputsCount()).isEqualTo(1);
    assertThat(requestsRecorded(INTERNAL)).isZero();
    assertThat(requestsRecorded("_internal")).isZero();
    assertThat(registry.find("kiln.gateway.routes").counters()).isEmpty();
    assertThat(registry.find("kiln.gateway.requests.in.flight").gauge().value()).isZero();
    assertThat(requestsRecorded("mlp")).isEqualTo(1); // the refused one

    hold.release();
    hold.release(); // idempotent

    assertThat(get("/v2/health/ready").statusCode()).isEqualTo(200);
    assertThat(grpcServerReady()).isTrue();
    assertThat(get("/v2/models/mlp/ready").statusCode()).isEqualTo(200);
    assertThat(grpcModelReady("mlp")).isTrue();
    assertThat(infer("mlp").statusCode()).isEqualTo(200);
    assertThat(requestsRecorded("mlp")).isEqualTo(2);
    assertThat(registry.find("kiln.gateway.routes").tag("reason", "local").counter().count()).isEqualTo(1);
  }

  @Test
  void theServerIsReadyOnlyOnceEveryHoldIsReleased() {
    listen();
    assertThat(get("/v2/health/ready").statusCode()).isEqualTo(200);

    ReadinessHold first = gateway.holdReadiness("first");
    try (ReadinessHold second = gateway.holdReadiness("second")) {
      assertThat(second.reason()).isEqualTo("second");
      assertThat(get("/v2/health/ready").bodyAsJsonObject().getString("error")).isEqualTo("server not ready: first");
      first.release();
      assertThat(get("/v2/health/ready").bodyAsJsonObject().getString("error")).isEqualTo("server not ready: second");
      assertThat(grpcServerReady()).isFalse();
    }
    assertThat(get("/v2/health/ready").statusCode()).isEqualTo(200);
    assertThat(grpcServerReady()).isTrue();
  }

  @Test
  void aHoldOnTheServerOnlyKeepsTheModelsReadyAndServingAndAsksClientsToReconnect() {
    listen();
    ReadinessHold draining = gateway.holdServerReadiness("draining");

    HttpResponse<Buffer> server = get("/v2/health/ready");
    assertThat(server.statusCode()).isEqualTo(503);
    assertThat(server.bodyAsJsonObject().getString("error")).isEqualTo("server not ready: draining");
    assertThat(grpcServerReady()).isFalse();
    assertThat(get("/v2/health/live").statusCode()).isEqualTo(200);
    assertThat(get("/v2/models/mlp/ready").statusCode()).isEqualTo(200);
    assertThat(grpcModelReady("mlp")).isTrue();
    HttpResponse<Buffer> served = infer("mlp");
    assertThat(served.statusCode()).isEqualTo(200);
    assertThat(served.getHeader("Connection")).as("clients are asked to reconnect elsewhere").isEqualTo("close");
    assertThat(gateway.requestsInFlight()).isZero();

    draining.release();
    assertThat(get("/v2/health/ready").statusCode()).isEqualTo(200);
    assertThat(infer("mlp").getHeader("Connection")).isNotEqualTo("close");
    assertThat(grpcServerReady()).isTrue();
  }
}
