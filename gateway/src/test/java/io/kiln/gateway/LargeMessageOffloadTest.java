package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One rule for large messages over HTTP and gRPC alike: a request of more than 256 KiB is decoded, and an answer of
 * more than 256 KiB of tensor bytes encoded, on a worker thread (each counted in
 * {@code kiln_gateway_offloaded_total{protocol}}); a small one is served on the event loop.
 */
class LargeMessageOffloadTest extends GatewayTestBase {

  private static final int THRESHOLD = 256 * 1024;
  private static final int LARGE = 300_000; // INT8 elements: tensor bytes over the threshold, in and out

  private double offloaded(String protocol) {
    var c = registry.find("kiln.gateway.offloaded").tag("protocol", protocol).counter();
    return c == null ? 0 : c.count();
  }

  private HttpResponse<Buffer> httpInfer(int elements) {
    List<Object> data = new ArrayList<>(elements);
    for (int i = 0; i < elements; i++) {
      data.add(i % 10);
    }
    String json = OipRequest.create().input(new OipRequest.Input("x", "INT8", new long[] {elements}, data)).json();
    return postJson("/v2/models/" + TestModels.identity(DataType.INT8) + "/infer", json);
  }

  private GrpcClient bigClient;
  private GRPCInferenceServiceGrpcClient big;

  @BeforeAll
  void bigMessageClient() { // the default client takes answers of at most 256 KiB
    bigClient = GrpcClient.client(vertx, new GrpcClientOptions().setMaxMessageSize(MAX_BODY));
    big = GRPCInferenceServiceGrpcClient.create(bigClient, SocketAddress.inetSocketAddress(gateway.grpcPort(), HOST));
  }

  @AfterAll
  void closeBigMessageClient() {
    join(bigClient.close());
  }

  private ModelInferResponse grpcInfer(int elements) {
    byte[] data = new byte[elements];
    Arrays.fill(data, (byte) 7);
    return join(big.modelInfer(ModelInferRequest.newBuilder()
        .setModelName(TestModels.identity(DataType.INT8))
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("x").setDatatype("INT8").addShape(elements))
        .addRawInputContents(ByteString.copyFrom(data)).build()));
  }

  @Test
  void overHttpALargeBodyAndAnswerAreOffloadedAndASmallOneIsNot() {
    double before = offloaded("http");
    HttpResponse<Buffer> small = httpInfer(3);
    assertThat(small.statusCode()).as(small.bodyAsString()).isEqualTo(200);
    assertThat(offloaded("http")).isEqualTo(before);

    HttpResponse<Buffer> large = httpInfer(LARGE);
    assertThat(large.statusCode()).as(large.bodyAsString()).isEqualTo(200);
    JsonArray out = large.bodyAsJsonObject().getJsonArray("outputs").getJsonObject(0).getJsonArray("data");
    assertThat(out).hasSize(LARGE);
    assertThat(out.getInteger(LARGE - 1)).isEqualTo((LARGE - 1) % 10);
    assertThat(offloaded("http")).as("the body decoded and the answer encoded on a worker").isEqualTo(before + 2);
  }

  @Test
  void overGrpcALargeMessageAndAnswerAreOffloadedAndASmallOneIsNot() {
    double before = offloaded("grpc");
    assertThat(grpcInfer(3).getRawOutputContents(0).size()).isEqualTo(3);
    assertThat(offloaded("grpc")).isEqualTo(before);

    ModelInferResponse large = grpcInfer(LARGE);
    assertThat(large.getRawOutputContents(0).size()).isEqualTo(LARGE).isGreaterThan(THRESHOLD);
    assertThat(large.getRawOutputContents(0).byteAt(LARGE - 1)).isEqualTo((byte) 7);
    assertThat(offloaded("grpc")).as("the message decoded and the answer encoded on a worker").isEqualTo(before + 2);
  }
}
