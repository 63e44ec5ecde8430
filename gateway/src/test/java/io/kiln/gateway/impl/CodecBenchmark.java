package io.kiln.gateway.impl;

import com.google.protobuf.ByteString;
import io.kiln.gateway.ModelInfo;
import io.kiln.loadtest.impl.BareGrpcCodec;
import io.kiln.loadtest.impl.BareOipCodec;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.buffer.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The gateway's OIP codecs against the bare servers' ({@link BareOipCodec}, {@link BareGrpcCodec}: the limits
 * {@code loadtest/run.sh pinned} measures Kiln against), on the load test's own request: one FP32 [1, 64] tensor
 * ({@code tensor_request} in run.sh: {@code (i % 17) / 17 - 0.5} printed with 4 decimals). Kiln's side is
 * what HttpApi and GrpcApi call per request: the body as Vert.x hands it over to a validated request, and a
 * response to the bytes sent. {@code encode10} answers ten floats as the bare server does; {@code encode64} is
 * what the identity model really answers to that request. Run with {@code loadtest/bench-codec.sh}
 * ({@code -prof gc} gives B/op, the stable figure on a shared machine).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CodecBenchmark {

  static final int ELEMENTS = 64;

  private ModelInfo model;
  private HttpInferDecoder kilnDecoder;
  private JsonResponseEncoder kilnEncoder;
  private BareOipCodec bare;
  private Buffer jsonBody;
  private Buffer binaryBody;
  private String binaryHeaderLength;
  private InferenceResponse response10;
  private InferenceResponse response64;
  private BareOipCodec.Request bareRequest;
  private ModelInferRequest grpcRequest;
  private DecodedRequest grpcDecoded;
  private io.vertx.grpc.common.GrpcMessage grpcMessage;

  @Setup
  public void setup() {
    model = identityModel();
    JsonRequestDecoder json = new JsonRequestDecoder(64L << 20);
    kilnDecoder = new HttpInferDecoder(json);
    kilnEncoder = new JsonResponseEncoder(json.factory());
    bare = new BareOipCodec();
    jsonBody = Buffer.buffer(jsonRequest());
    byte[] header = ("{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP32\", \"shape\": [1, 64], "
        + "\"parameters\": {\"binary_data_size\": 256}}]}").getBytes(StandardCharsets.UTF_8);
    binaryHeaderLength = Integer.toString(header.length);
    binaryBody = Buffer.buffer(header).appendBytes(rawFloats(ELEMENTS));
    response10 = response(10);
    response64 = response(ELEMENTS);
    bareRequest = bare.decode(jsonBody.getBytes(), null);
    grpcRequest = ModelInferRequest.newBuilder()
        .setModelName("identity")
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("input").setDatatype("FP32")
            .addShape(1).addShape(ELEMENTS))
        .addRawInputContents(ByteString.copyFrom(rawFloats(ELEMENTS)))
        .build();
    grpcDecoded = GrpcCodec.decode(grpcRequest, model);
    grpcMessage = io.vertx.grpc.common.GrpcMessage.message("identity", io.vertx.grpc.common.WireFormat.PROTOBUF,
        Buffer.buffer(grpcRequest.toByteArray()));
  }

  /** {@code builtin:identity} as {@code deploy/examples/bench/noop.yaml} declares it: FP32 [-1, 64] in and out. */
  static ModelInfo identityModel() {
    TensorSpec in = new TensorSpec("input", DataType.FP32, new long[] {-1, ELEMENTS});
    TensorSpec out = new TensorSpec("output", DataType.FP32, new long[] {-1, ELEMENTS});
    return new ModelInfo("identity", "1", List.of("1"), "kiln_builtin", new ModelSignature(List.of(in), List.of(out)),
        true, 0);
  }

  /** The load test's JSON request body, byte for byte (loadtest/run.sh tensor_request). */
  static byte[] jsonRequest() {
    StringBuilder data = new StringBuilder();
    for (int i = 0; i < ELEMENTS; i++) {
      data.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.4f", (i % 17) / 17.0 - 0.5));
    }
    return ("{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP32\", \"shape\": [1, 64], \"data\": [" + data
        + "]}]}\n").getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] rawFloats(int n) {
    ByteBuffer b = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      b.putFloat((float) ((i % 17) / 17.0 - 0.5));
    }
    return b.array();
  }

  private static InferenceResponse response(int n) {
    return new InferenceResponse("", "identity", "1",
        List.of(new Tensor("output", DataType.FP32, new long[] {1, n}, rawFloats(n))), Map.of());
  }

  @Benchmark
  public DecodedRequest kilnDecodeJson() {
    return kilnDecoder.decode(model, jsonBody, null);
  }

  @Benchmark
  public BareOipCodec.Request bareDecodeJson() {
    return bare.decode(jsonBody.getBytes(), null);
  }

  @Benchmark
  public DecodedRequest kilnDecodeBinary() {
    return kilnDecoder.decode(model, binaryBody, binaryHeaderLength);
  }

  @Benchmark
  public BareOipCodec.Request bareDecodeBinary() {
    return bare.decode(binaryBody.getBytes(), binaryHeaderLength);
  }

  @Benchmark
  public JsonResponseEncoder.Encoded kilnEncode10() {
    return kilnEncoder.infer(response10, name -> false);
  }

  @Benchmark
  public JsonResponseEncoder.Encoded kilnEncode64() {
    return kilnEncoder.infer(response64, name -> false);
  }

  @Benchmark
  public Buffer bareEncode10() {
    return Buffer.buffer(bare.encode("identity", bareRequest).body());
  }

  /** The whole codec work of one identity request, 64 floats in and out. */
  @Benchmark
  public JsonResponseEncoder.Encoded kilnRoundTrip64() {
    DecodedRequest d = kilnDecoder.decode(model, jsonBody, null);
    return kilnEncoder.infer(response64, d.header().binaryOutputs());
  }

  /** The bare server's whole work: 64 floats in, 10 out. */
  @Benchmark
  public Buffer bareRoundTrip() {
    BareOipCodec.Request r = bare.decode(jsonBody.getBytes(), null);
    return Buffer.buffer(bare.encode("identity", r).body());
  }

  /** gRPC, raw_input_contents in, raw_output_contents (10 floats) out, serialised as vertx-grpc does. */
  @Benchmark
  public byte[] kilnGrpcRoundTrip10() {
    DecodedRequest d = GrpcCodec.decode(grpcRequest, model);
    return GrpcCodec.encode(response10, d).toByteArray();
  }

  @Benchmark
  public byte[] bareGrpcRoundTrip10() {
    return BareGrpcCodec.answer(grpcRequest).toByteArray();
  }

  @Benchmark
  public ModelInferResponse kilnGrpcEncode10() {
    return GrpcCodec.encode(response10, grpcDecoded);
  }

  /**
   * gRPC from the message's bytes to the answer's bytes, 64 floats back (what identity answers), through
   * vertx-grpc's generated codecs: each raw_input_contents entry copied twice on the way in, the answer once
   * more on the way out.
   */
  @Benchmark
  public Buffer grpcWireGenerated64() {
    var method = io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService.ModelInfer;
    DecodedRequest d = GrpcCodec.decode(method.decoder().decode(grpcMessage), model);
    return method.encoder().encode(GrpcCodec.encode(response64, d), io.vertx.grpc.common.WireFormat.PROTOBUF).payload();
  }

  /** {@link #grpcWireGenerated64} through the gateway's own ModelInfer codecs ({@link GrpcWire}). */
  @Benchmark
  public Buffer grpcWireKiln64() {
    DecodedRequest d = GrpcCodec.decode(GrpcWire.DECODER.decode(grpcMessage), model);
    return GrpcWire.ENCODER.encode(GrpcCodec.encode(response64, d), io.vertx.grpc.common.WireFormat.PROTOBUF).payload();
  }
}
