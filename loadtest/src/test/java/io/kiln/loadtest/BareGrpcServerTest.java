package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.loadtest.impl.BareOipCodec;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** BareGrpcServer: a real server on a free port, called by the generated OIP gRPC client of module protocol. */
class BareGrpcServerTest {
  private static BareGrpcServer server;
  private static Vertx vertx;
  private static GrpcClient client;

  record Result(GrpcStatus status, String message, ModelInferResponse body) {
  }

  @BeforeAll
  static void start() {
    server = BareGrpcServer.start(BareGrpcServer.Options.defaults());
    vertx = Vertx.vertx();
    client = GrpcClient.client(vertx);
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    client.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static SocketAddress address() {
    return SocketAddress.inetSocketAddress(server.port(), "127.0.0.1");
  }

  /** A call through the raw client API, so the status and its message can be checked. */
  private static Result call(ModelInferRequest request) throws Exception {
    return VertxCalls.await(vertx, () -> client.request(address(), GRPCInferenceServiceGrpcClient.ModelInfer)
        .compose(req -> {
          req.end(request);
          return req.response().compose(resp -> {
            List<ModelInferResponse> messages = new ArrayList<>();
            resp.handler(messages::add);
            return resp.end().transform(ar -> Future.succeededFuture(
                new Result(resp.status(), resp.statusMessage(), messages.isEmpty() ? null : messages.get(0))));
          });
        }));
  }

  private static ByteString raw(float... values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(values);
    return ByteString.copyFrom(b.array());
  }

  private static InferInputTensor.Builder input(String datatype, long... shape) {
    InferInputTensor.Builder t = InferInputTensor.newBuilder().setName("input").setDatatype(datatype);
    for (long d : shape) {
      t.addShape(d);
    }
    return t;
  }

  private static float[] output(ModelInferResponse r) {
    float[] f = new float[r.getRawOutputContents(0).size() / 4];
    r.getRawOutputContents(0).asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
    return f;
  }

  @Test
  void answersRawInputContentsWithTheFirstTenValuesInRawOutputContents() throws Exception {
    float[] values = new float[64];
    for (int i = 0; i < values.length; i++) {
      values[i] = (i % 17) / 17f - 0.5f;
    }
    ModelInferRequest request = ModelInferRequest.newBuilder().setModelName("noop").setId("a1")
        .addInputs(input("FP32", 1, 64)).addRawInputContents(raw(values)).build();

    ModelInferResponse r = VertxCalls.await(vertx,
        () -> GRPCInferenceServiceGrpcClient.create(client, address()).modelInfer(request));

    assertThat(r.getModelName()).isEqualTo("noop");
    assertThat(r.getId()).isEqualTo("a1");
    assertThat(r.getOutputsCount()).isOne();
    assertThat(r.getOutputs(0).getName()).isEqualTo("output");
    assertThat(r.getOutputs(0).getDatatype()).isEqualTo("FP32");
    assertThat(r.getOutputs(0).getShapeList()).containsExactly(1L, 10L);
    assertThat(output(r)).containsExactly(Arrays.copyOf(values, 10));
    assertThat(server.requestsReceived()).isPositive();
  }

  @Test
  void modelEchoAnswersTheWholeFirstInputAsIdentityDoes() throws Exception {
    float[] values = new float[64];
    for (int i = 0; i < values.length; i++) {
      values[i] = i * 0.5f - 3;
    }
    ModelInferRequest request = ModelInferRequest.newBuilder().setModelName(BareOipCodec.ECHO)
        .addInputs(input("FP32", 2, 32)).addRawInputContents(raw(values)).build();

    Result r = call(request);

    assertThat(r.status()).as(r.message()).isEqualTo(GrpcStatus.OK);
    assertThat(r.body().getOutputs(0).getShapeList()).containsExactly(2L, 32L);
    assertThat(output(r.body())).containsExactly(values);
  }

  @Test
  void answersTypedFp32Contents() throws Exception {
    ModelInferRequest request = ModelInferRequest.newBuilder().setModelName("mlp")
        .addInputs(input("FP32", 3).setContents(InferTensorContents.newBuilder().addFp32Contents(1).addFp32Contents(2)
            .addFp32Contents(3)))
        .build();

    Result r = call(request);

    assertThat(r.status()).as(r.message()).isEqualTo(GrpcStatus.OK);
    assertThat(output(r.body())).containsExactly(1, 2, 3, 0, 0, 0, 0, 0, 0, 0);
  }

  @Test
  void invalidRequestsGetInvalidArgumentNamingTheProblem() throws Exception {
    Result shortRaw = call(ModelInferRequest.newBuilder().setModelName("m").addInputs(input("FP32", 1, 4))
        .addRawInputContents(raw(1, 2, 3)).build());
    Result wrongType = call(ModelInferRequest.newBuilder().setModelName("m").addInputs(input("INT32", 1))
        .addRawInputContents(raw(1)).build());
    Result noInputs = call(ModelInferRequest.newBuilder().setModelName("m").build());
    Result rawCount = call(ModelInferRequest.newBuilder().setModelName("m").addInputs(input("FP32", 1))
        .addInputs(input("FP32", 1)).addRawInputContents(raw(1)).build());
    Result fewContents = call(ModelInferRequest.newBuilder().setModelName("m")
        .addInputs(input("FP32", 2).setContents(InferTensorContents.newBuilder().addFp32Contents(1))).build());

    assertThat(shortRaw.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(shortRaw.message()).contains("raw_input_contents[0]: 12 bytes, but FP32 shape [1, 4] needs 16");
    assertThat(wrongType.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(wrongType.message()).contains("'INT32' is not FP32");
    assertThat(noInputs.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(noInputs.message()).contains("inputs: missing");
    assertThat(rawCount.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(rawCount.message()).contains("1 entries for 2 inputs");
    assertThat(fewContents.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(fewContents.message()).contains("has 1 elements but shape [2] needs 2");
  }
}
