package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelInferRequest.InferRequestedOutputTensor;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelMetadataRequest;
import io.kiln.protocol.grpc.ModelMetadataResponse;
import io.kiln.protocol.grpc.ModelReadyRequest;
import io.kiln.protocol.grpc.ModelReadyResponse;
import io.kiln.protocol.grpc.ServerLiveRequest;
import io.kiln.protocol.grpc.ServerMetadataRequest;
import io.kiln.protocol.grpc.ServerMetadataResponse;
import io.kiln.protocol.grpc.ServerReadyRequest;
import io.kiln.gateway.support.FakeCluster.Sent;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClientRequest;
import io.vertx.grpc.common.GrpcStatus;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** {@code inference.GRPCInferenceService} through the generated Vert.x gRPC client. */
@Tag("slow")
class GrpcServiceTest extends GatewayTestBase {

  private static InferInputTensor.Builder input(String name, DataType type, long... shape) {
    InferInputTensor.Builder b = InferInputTensor.newBuilder().setName(name).setDatatype(type.name());
    for (long d : shape) {
      b.addShape(d);
    }
    return b;
  }

  private static ModelInferRequest mlpTyped(float... values) {
    InferTensorContents.Builder c = InferTensorContents.newBuilder();
    for (float v : values) {
      c.addFp32Contents(v);
    }
    return ModelInferRequest.newBuilder().setModelName("mlp").setId("g-1")
        .addInputs(input("input", DataType.FP32, values.length / 4, 4).setContents(c)).build();
  }

  private static ByteString le(float... values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (float v : values) {
      b.putFloat(v);
    }
    return ByteString.copyFrom(b.array());
  }

  private GrpcResult<ModelInferResponse> infer(ModelInferRequest req) {
    return call(GRPCInferenceServiceGrpcClient.ModelInfer, req);
  }

  @Test
  void healthAndServerMetadata() {
    assertThat(join(grpc.serverLive(ServerLiveRequest.getDefaultInstance())).getLive()).isTrue();
    // "cold" is not ready, the server is all the same (not strict): it serves the others.
    assertThat(join(grpc.serverReady(ServerReadyRequest.getDefaultInstance())).getReady()).isTrue();
    ServerMetadataResponse meta = join(grpc.serverMetadata(ServerMetadataRequest.getDefaultInstance()));
    assertThat(meta.getName()).isEqualTo("kiln");
    assertThat(meta.getVersion()).isEqualTo(GatewayOptions.DEFAULT_SERVER_VERSION);
    assertThat(meta.getExtensionsList()).containsExactly("binary_tensor_data", "system_shared_memory");
  }

  @Test
  void modelMetadataAndReadiness() {
    ModelMetadataResponse m = join(grpc.modelMetadata(ModelMetadataRequest.newBuilder().setName("mlp").build()));
    assertThat(m.getName()).isEqualTo("mlp");
    assertThat(m.getVersionsList()).containsExactly("1", "2");
    assertThat(m.getPlatform()).isEqualTo("pytorch_torchscript");
    assertThat(m.getInputs(0).getName()).isEqualTo("input");
    assertThat(m.getInputs(0).getDatatype()).isEqualTo("FP32");
    assertThat(m.getInputs(0).getShapeList()).containsExactly(-1L, 4L);
    assertThat(m.getOutputs(0).getName()).isEqualTo("output");

    assertThat(join(grpc.modelReady(ModelReadyRequest.newBuilder().setName("mlp").setVersion("1").build())).getReady()).isTrue();
    assertThat(join(grpc.modelReady(ModelReadyRequest.newBuilder().setName(TestModels.COLD).build())).getReady()).isFalse();

    GrpcResult<ModelReadyResponse> unknown = call(GRPCInferenceServiceGrpcClient.ModelReady,
        ModelReadyRequest.newBuilder().setName("nope").build());
    assertThat(unknown.status()).isEqualTo(GrpcStatus.NOT_FOUND);
    assertThat(unknown.message()).isEqualTo("model 'nope' not found");
    GrpcResult<ModelMetadataResponse> noVersion = call(GRPCInferenceServiceGrpcClient.ModelMetadata,
        ModelMetadataRequest.newBuilder().setName("mlp").setVersion("5").build());
    assertThat(noVersion.status()).isEqualTo(GrpcStatus.NOT_FOUND);
    assertThat(noVersion.message()).isEqualTo("model 'mlp' has no version '5'");
  }

  @Test
  void typedContentsInTypedContentsOut() {
    ModelInferRequest req = mlpTyped(1, 2, 3, 4, 5, 6, 7, 8).toBuilder()
        .putParameters("trace", InferParameter.newBuilder().setStringParam("t-9").build()).build();
    ModelInferResponse r = join(grpc.modelInfer(req));
    assertThat(r.getModelName()).isEqualTo("mlp");
    assertThat(r.getModelVersion()).isEqualTo("2");
    assertThat(r.getId()).isEqualTo("g-1");
    assertThat(r.getParametersMap().get("kiln_node").getStringParam()).isEqualTo("node-a");
    assertThat(r.getRawOutputContentsCount()).isZero();
    assertThat(r.getOutputs(0).getName()).isEqualTo("output");
    assertThat(r.getOutputs(0).getShapeList()).containsExactly(2L, 4L);
    assertThat(r.getOutputs(0).getContents().getFp32ContentsList()).containsExactly(2f, 4f, 6f, 8f, 10f, 12f, 14f, 16f);
    Sent sent = cluster.last();
    assertThat(sent.request().parameters()).containsEntry("trace", "t-9");
    assertThat(sent.request().inputs().get(0))
        .isEqualTo(Tensor.ofFloats("input", new long[] {2, 4}, new float[] {1, 2, 3, 4, 5, 6, 7, 8}));
  }

  @Test
  void rawContentsInRawContentsOut() {
    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName("mlp").setModelVersion("1")
        .addInputs(input("input", DataType.FP32, 1, 4)).addRawInputContents(le(0.5f, -1, 2, 3)).build();
    ModelInferResponse r = join(grpc.modelInfer(req));
    assertThat(r.getModelVersion()).isEqualTo("1");
    assertThat(r.getRawOutputContentsList()).containsExactly(le(1, -2, 4, 6));
    assertThat(r.getOutputs(0).hasContents()).isFalse();
  }

  @Test
  void everyTypedDatatypeRoundTrips() {
    check(DataType.BOOL, InferTensorContents.newBuilder().addBoolContents(true).addBoolContents(false).build(), 2);
    check(DataType.INT8, InferTensorContents.newBuilder().addIntContents(-128).addIntContents(127).build(), 2);
    check(DataType.INT16, InferTensorContents.newBuilder().addIntContents(-32768).addIntContents(32767).build(), 2);
    check(DataType.INT32, InferTensorContents.newBuilder().addIntContents(Integer.MIN_VALUE).build(), 1);
    check(DataType.INT64, InferTensorContents.newBuilder().addInt64Contents(Long.MIN_VALUE).addInt64Contents(5).build(), 2);
    check(DataType.UINT8, InferTensorContents.newBuilder().addUintContents(255).build(), 1);
    check(DataType.UINT16, InferTensorContents.newBuilder().addUintContents(65535).build(), 1);
    check(DataType.UINT32, InferTensorContents.newBuilder().addUintContents(-1).build(), 1); // 2^32 - 1
    check(DataType.UINT64, InferTensorContents.newBuilder().addUint64Contents(-1L).build(), 1); // 2^64 - 1
    check(DataType.FP64, InferTensorContents.newBuilder().addFp64Contents(1e300).addFp64Contents(-0.1).build(), 2);
    check(DataType.BYTES, InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("héllo"))
        .addBytesContents(ByteString.EMPTY).build(), 2);
  }

  private void check(DataType type, InferTensorContents contents, int n) {
    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName(TestModels.identity(type))
        .addInputs(input("x", type, n).setContents(contents)).build();
    GrpcResult<ModelInferResponse> r = infer(req);
    assertThat(r.status()).as(type + ": " + r.message()).isEqualTo(GrpcStatus.OK);
    assertThat(r.body().getOutputs(0).getDatatype()).isEqualTo(type.name());
    assertThat(r.body().getOutputs(0).getContents()).as(type.name()).isEqualTo(contents);
  }

  @Test
  void halfPrecisionGoesRawBothWays() {
    ByteString halves = ByteString.copyFrom(new byte[] {0x00, 0x3c, 0x00, (byte) 0xc0}); // 1.0, -2.0
    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.FP16))
        .addInputs(input("x", DataType.FP16, 2)).addRawInputContents(halves).build();
    ModelInferResponse r = join(grpc.modelInfer(req));
    assertThat(r.getRawOutputContents(0)).isEqualTo(halves);

    GrpcResult<ModelInferResponse> typed = infer(ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.FP16))
        .addInputs(input("x", DataType.FP16, 1).setContents(InferTensorContents.newBuilder().addFp32Contents(1))).build());
    assertThat(typed.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(typed.message()).isEqualTo("inputs[0].contents: FP16 has no typed field; send it in raw_input_contents");
  }

  @Test
  void binaryDataOutputAsksForRawOutputs() {
    ModelInferRequest req = mlpTyped(1, 1, 1, 1).toBuilder()
        .addOutputs(InferRequestedOutputTensor.newBuilder().setName("output")
            .putParameters("binary_data", InferParameter.newBuilder().setBoolParam(true).build()))
        .build();
    ModelInferResponse r = join(grpc.modelInfer(req));
    assertThat(r.getRawOutputContentsList()).containsExactly(le(2, 2, 2, 2));
  }

  @Test
  void invalidInputsAreInvalidArgumentNamingTheField() {
    GrpcResult<ModelInferResponse> wrongType = infer(ModelInferRequest.newBuilder().setModelName("mlp")
        .addInputs(input("input", DataType.INT32, 1, 4).setContents(InferTensorContents.newBuilder().addIntContents(1))).build());
    assertThat(wrongType.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(wrongType.message()).isEqualTo("inputs[0].datatype: input 'input' is FP32, got INT32");

    GrpcResult<ModelInferResponse> wrongCount = infer(mlpTyped(1, 2, 3, 4).toBuilder()
        .setInputs(0, input("input", DataType.FP32, 2, 4).setContents(InferTensorContents.newBuilder().addFp32Contents(1))).build());
    assertThat(wrongCount.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(wrongCount.message()).isEqualTo("inputs[0].contents: has 1 elements but shape [2, 4] needs 8");

    GrpcResult<ModelInferResponse> wrongField = infer(ModelInferRequest.newBuilder().setModelName("mlp")
        .addInputs(input("input", DataType.FP32, 1, 4).setContents(InferTensorContents.newBuilder().addFp64Contents(1))).build());
    assertThat(wrongField.message()).isEqualTo("inputs[0].contents: FP32 elements must be in fp32_contents, found elements in other fields");

    GrpcResult<ModelInferResponse> rawSize = infer(ModelInferRequest.newBuilder().setModelName("mlp")
        .addInputs(input("input", DataType.FP32, 1, 4)).addRawInputContents(le(1, 2, 3)).build());
    assertThat(rawSize.message()).isEqualTo("raw_input_contents[0]: 12 bytes, but FP32 shape [1, 4] of input 'input' needs 16");

    GrpcResult<ModelInferResponse> rawCount = infer(ModelInferRequest.newBuilder().setModelName("pair")
        .addInputs(input("a", DataType.INT32, 1, 2)).addInputs(input("b", DataType.BYTES, 1))
        .addRawInputContents(ByteString.copyFrom(new byte[8])).build());
    assertThat(rawCount.message()).isEqualTo("raw_input_contents: 1 entries for 2 inputs");

    GrpcResult<ModelInferResponse> range = infer(ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.INT8))
        .addInputs(input("x", DataType.INT8, 1).setContents(InferTensorContents.newBuilder().addIntContents(1000))).build());
    assertThat(range.message()).isEqualTo("inputs[0].contents element 0: 1000 is out of range for INT8");

    GrpcResult<ModelInferResponse> missing = infer(ModelInferRequest.newBuilder().setModelName("pair")
        .addInputs(input("a", DataType.INT32, 1, 2).setContents(InferTensorContents.newBuilder().addIntContents(1).addIntContents(2)))
        .build());
    assertThat(missing.message()).isEqualTo("inputs: missing input 'b' of model 'pair'");
    assertThat(cluster.sent).isEmpty();
    // Still serving.
    assertThat(infer(mlpTyped(1, 2, 3, 4)).status()).isEqualTo(GrpcStatus.OK);
  }

  @Test
  void unknownModelIsNotFound() {
    GrpcResult<ModelInferResponse> r = infer(ModelInferRequest.newBuilder().setModelName("ghost").build());
    assertThat(r.status()).isEqualTo(GrpcStatus.NOT_FOUND);
    assertThat(r.message()).isEqualTo("model 'ghost' not found");
  }

  @Test
  void notReadyAndOverCapacityAreUnavailableWithRetryAfter() {
    cluster.setNotReady("mlp");
    GrpcResult<ModelInferResponse> cold = infer(mlpTyped(1, 2, 3, 4));
    assertThat(cold.status()).isEqualTo(GrpcStatus.UNAVAILABLE);
    assertThat(cold.message()).isEqualTo("model 'mlp' version '2' is not ready");
    assertThat(cold.trailers().get("retry-after")).isEqualTo("2");

    cluster.reset();
    for (String n : java.util.List.of("node-a", "node-b", "node-c")) {
      cluster.node(n).failWith = new CapacityExceededException("queue full", Duration.ofMillis(2500));
    }
    GrpcResult<ModelInferResponse> full = infer(mlpTyped(1, 2, 3, 4));
    assertThat(full.status()).isEqualTo(GrpcStatus.UNAVAILABLE);
    assertThat(full.message()).isEqualTo("queue full");
    assertThat(full.trailers().get("retry-after")).isEqualTo("3");
  }

  @Test
  void deadlinesFromGrpcTimeoutAndMetadataAreDeadlineExceeded() {
    cluster.node("node-a").hold = true;
    GrpcResult<ModelInferResponse> byMetadata = call(GRPCInferenceServiceGrpcClient.ModelInfer, mlpTyped(1, 2, 3, 4),
        Map.of("kiln-timeout-ms", "200"), 0);
    assertThat(byMetadata.status()).isEqualTo(GrpcStatus.DEADLINE_EXCEEDED);
    assertThat(byMetadata.message()).isEqualTo("deadline of 200 ms passed");
    assertThat(cluster.last().future().isCancelled()).isTrue();

    // A grpc-timeout shortens the deadline the pool sees too.
    cluster.node("node-a").hold = false;
    assertThat(call(GRPCInferenceServiceGrpcClient.ModelInfer, mlpTyped(1, 2, 3, 4), Map.of(), 5000).status())
        .isEqualTo(GrpcStatus.OK);
    Sent s = cluster.last();
    assertThat(s.deadlineNanos() - s.sentAtNanos()).isLessThanOrEqualTo(Duration.ofMillis(5000).toNanos());
  }

  @Test
  void aMessageOverTheLimitIsResourceExhausted() {
    ModelInferRequest big = ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.UINT8))
        .addInputs(input("x", DataType.UINT8, MAX_BODY + 1)).addRawInputContents(ByteString.copyFrom(new byte[MAX_BODY + 1]))
        .build();
    GrpcResult<ModelInferResponse> r = infer(big);
    assertThat(r.status()).isEqualTo(GrpcStatus.RESOURCE_EXHAUSTED);
    assertThat(r.message()).contains("exceeds the limit of " + MAX_BODY + " bytes");
    assertThat(infer(mlpTyped(1, 2, 3, 4)).status()).isEqualTo(GrpcStatus.OK);
  }

  @Test
  void aBugInAPoolIsInternalWithoutInternals() {
    cluster.node("node-a").failWith = new IllegalStateException("secret");
    GrpcResult<ModelInferResponse> r = infer(mlpTyped(1, 2, 3, 4));
    assertThat(r.status()).isEqualTo(GrpcStatus.INTERNAL);
    assertThat(r.message()).isEqualTo("internal error");
  }

  @Test
  void aCancelledCallWithdrawsItsQueuedRequest() {
    cluster.node("node-a").hold = true;
    GrpcClientRequest<ModelInferRequest, ModelInferResponse> req = join(grpcClient.request(
        SocketAddress.inetSocketAddress(gateway.grpcPort(), HOST), GRPCInferenceServiceGrpcClient.ModelInfer));
    req.end(mlpTyped(1, 2, 3, 4));
    await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.sent.isEmpty());
    Sent queued = cluster.last();
    req.cancel();
    await().atMost(Duration.ofSeconds(20)).until(() -> queued.future().isCancelled());
    await().atMost(Duration.ofSeconds(20)).until(() -> get("/metrics").bodyAsString()
        .contains("kiln_gateway_requests_total{code=\"CANCELLED\",model=\"mlp\",outcome=\"cancelled\",protocol=\"grpc\"}"));
  }
}
