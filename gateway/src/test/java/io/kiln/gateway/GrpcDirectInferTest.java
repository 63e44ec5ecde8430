package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import io.vertx.grpc.common.GrpcStatus;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Plain gRPC ModelInfer calls, served on the HTTP/2 request itself (GrpcDirectInfer), and the calls left to Vert.x's
 * gRPC server (gzip): the same tensor bytes come back from both, a message split anywhere across DATA frames is put
 * together, and the framing faults Vert.x's server would leave unanswered or answer otherwise (a call ended inside its
 * message, a second message, a compressed message without an encoding, a prefix over the limit with no bytes behind
 * it) are answered at once with a status naming what is wrong.
 */
class GrpcDirectInferTest extends GatewayTestBase {

  private static final String PATH = "/inference.GRPCInferenceService/ModelInfer";

  private HttpClient h2;
  private GrpcClient bigClient;

  @BeforeAll
  void clients() {
    bigClient = GrpcClient.client(vertx, new GrpcClientOptions().setMaxMessageSize(MAX_BODY));
    h2 = vertx.createHttpClient(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
        .setHttp2ClearTextUpgrade(false));
  }

  @AfterAll
  void closeH2() {
    if (h2 != null) {
      join(h2.close());
      join(bigClient.close());
    }
  }

  private static ModelInferRequest rawIdentity(byte[] data) {
    return ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.UINT8)).setId("big")
        .addInputs(InferInputTensor.newBuilder().setName("x").setDatatype("UINT8").addShape(data.length))
        .addRawInputContents(ByteString.copyFrom(data)).build();
  }

  private static byte[] randomBytes(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static byte[] framed(byte[] message, int flag) {
    byte[] f = new byte[5 + message.length];
    f[0] = (byte) flag;
    f[1] = (byte) (message.length >>> 24);
    f[2] = (byte) (message.length >>> 16);
    f[3] = (byte) (message.length >>> 8);
    f[4] = (byte) message.length;
    System.arraycopy(message, 0, f, 5, message.length);
    return f;
  }

  /** What came back from a raw HTTP/2 call: its headers and trailers together, and the body's bytes. */
  private record Raw(MultiMap metadata, Buffer body) {
    String grpcStatus() {
      return metadata.get("grpc-status");
    }

    String grpcMessage() {
      String m = metadata.get("grpc-message");
      return m == null ? null : URLDecoder.decode(m, StandardCharsets.UTF_8);
    }
  }

  /** Sends {@code chunks} as the body of a ModelInfer call, each its own write, and ends the call if asked. */
  private Raw raw(List<Buffer> chunks, boolean end) {
    return join(h2.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(HOST).setPort(gateway.grpcPort())
        .setURI(PATH).putHeader("content-type", "application/grpc").putHeader("te", "trailers")).compose(req -> {
          req.setChunked(true);
          for (Buffer c : chunks) {
            req.write(c);
          }
          if (end) {
            req.end();
          }
          return req.response().compose(resp -> resp.body().map(body -> new Raw(
              MultiMap.caseInsensitiveMultiMap().addAll(resp.headers()).addAll(resp.trailers()), body)));
        }));
  }

  @Test
  void aTensorOfHalfAMegabyteComesBackByteExactOverBothServers() {
    byte[] data = randomBytes(600_000, 36);
    ModelInferResponse plain = bigCall(rawIdentity(data), null);
    assertThat(plain.getRawOutputContents(0).toByteArray()).isEqualTo(data);
    assertThat(plain.getId()).isEqualTo("big");
    // gzip goes to Vert.x's own server: the same answer.
    assertThat(bigCall(rawIdentity(data), "gzip")).isEqualTo(plain);
  }

  /** A call through a client that takes answers up to the server's limit (Vert.x's client takes 256 KiB). */
  private ModelInferResponse bigCall(ModelInferRequest request, String encoding) {
    return join(bigClient.request(SocketAddress.inetSocketAddress(gateway.grpcPort(), HOST),
        GRPCInferenceServiceGrpcClient.ModelInfer).compose(req -> {
          if (encoding != null) {
            req.encoding(encoding);
          }
          req.end(request);
          return req.response().compose(resp -> resp.last());
        }));
  }

  @Test
  void aMessageSplitAnywhereAcrossFramesIsPutTogether() {
    byte[] data = randomBytes(100_000, 7);
    byte[] framed = framed(rawIdentity(data).toByteArray(), 0);
    // 1, 2, 3 ... bytes per write: the prefix itself is split, then the body in growing pieces.
    List<Buffer> chunks = new ArrayList<>();
    for (int pos = 0, n = 1; pos < framed.length; pos += n, n = Math.min(n * 3, 40_000)) {
      chunks.add(Buffer.buffer(java.util.Arrays.copyOfRange(framed, pos, Math.min(framed.length, pos + n))));
    }
    Raw r = raw(chunks, true);
    assertThat(r.grpcStatus()).isEqualTo("0");
    assertThat(r.metadata().get("content-type")).isEqualTo("application/grpc");
    Buffer body = r.body();
    assertThat(body.getByte(0)).isZero();
    assertThat(body.getInt(1)).isEqualTo(body.length() - 5);
    ModelInferResponse answer = parse(body.getBytes(5, body.length()));
    assertThat(answer.getRawOutputContents(0).toByteArray()).isEqualTo(data);
  }

  @Test
  void framingFaultsAreAnsweredAtOnceNamingTheFault() {
    byte[] message = rawIdentity(randomBytes(1000, 1)).toByteArray();
    byte[] framed = framed(message, 0);

    Raw truncated = raw(List.of(Buffer.buffer(java.util.Arrays.copyOf(framed, 200))), true);
    assertThat(truncated.grpcStatus()).isEqualTo(Integer.toString(GrpcStatus.INVALID_ARGUMENT.code));
    assertThat(truncated.grpcMessage())
        .isEqualTo("message could not be decoded: the call ended before its message was complete");

    // The first message's call is held in the pool when the second arrives: refused, and the call withdrawn.
    cluster.node("node-a").hold = true;
    Raw twice = raw(List.of(Buffer.buffer(framed).appendBytes(framed)), true);
    assertThat(twice.grpcStatus()).isEqualTo(Integer.toString(GrpcStatus.INVALID_ARGUMENT.code));
    assertThat(twice.grpcMessage()).isEqualTo("a ModelInfer call carries one message, this one more");
    assertThat(cluster.last().future().isCancelled()).isTrue();
    cluster.node("node-a").hold = false;

    Raw compressed = raw(List.of(Buffer.buffer(framed(message, 1))), true);
    assertThat(compressed.grpcStatus()).isEqualTo(Integer.toString(GrpcStatus.INVALID_ARGUMENT.code));
    assertThat(compressed.grpcMessage()).isEqualTo("message could not be decoded: compressed, but the call has no grpc-encoding");

    Raw garbage = raw(List.of(Buffer.buffer(framed(new byte[] {(byte) 0xff, 0x01, 0x02}, 0))), true);
    assertThat(garbage.grpcStatus()).isEqualTo(Integer.toString(GrpcStatus.INVALID_ARGUMENT.code));
    assertThat(garbage.grpcMessage()).isEqualTo("message could not be decoded");

    // Only the prefix of an over-limit message is sent and the call left open: the answer needs none of its bytes.
    Buffer prefix = Buffer.buffer().appendByte((byte) 0).appendInt(MAX_BODY + 1);
    Raw tooLarge = raw(List.of(prefix), false);
    assertThat(tooLarge.grpcStatus()).isEqualTo(Integer.toString(GrpcStatus.RESOURCE_EXHAUSTED.code));
    assertThat(tooLarge.grpcMessage())
        .isEqualTo("message of " + (MAX_BODY + 1) + " bytes exceeds the limit of " + MAX_BODY + " bytes");

    // The connection still serves.
    assertThat(raw(List.of(Buffer.buffer(framed)), true).grpcStatus()).isEqualTo("0");
  }

  @Test
  void anEmptyMessageIsOneMessage() {
    Raw empty = raw(List.of(Buffer.buffer(framed(new byte[0], 0))), true);
    // An empty ModelInferRequest names no model.
    assertThat(empty.grpcStatus()).isEqualTo(Integer.toString(GrpcStatus.NOT_FOUND.code));
  }

  private static ModelInferResponse parse(byte[] bytes) {
    try {
      return ModelInferResponse.parseFrom(bytes);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }
}
