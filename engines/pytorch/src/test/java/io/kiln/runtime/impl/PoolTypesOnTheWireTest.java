package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.engines.builtin.impl.DiagnosticModels;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolRequest;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.PoolStats;
import io.kiln.pools.PoolStatus;
import io.kiln.pools.Tensor;
import io.kiln.pools.WorkerSpec;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.kiln.runtime.Resources;
import io.kiln.runtime.WireCodec;
import io.kiln.runtime.function.ActorAsyncMethod1;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * The pool types as they cross nodes: through the runtime's own CBOR codec (and its JSON mapper), and
 * through its call and reply message codecs, which live in this package (hence this test's package).
 */
class PoolTypesOnTheWireTest {

  private static final Tensor FLOATS = Tensor.ofFloats("input", new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, Float.NaN});
  private static final Tensor INTS = new Tensor("ids", DataType.INT64, new long[] {1, 2}, new byte[16]);
  private static final Tensor STRINGS = new Tensor("text", DataType.BYTES, new long[] {1},
      new byte[] {2, 0, 0, 0, 'h', 'i'});

  private static final ModelSpec MLP = ModelSpec.builder().uri("models/mlp")
      .input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 10)
      .warmupBatchSizes(1, 8).intraOpThreads(1).build();
  private static final ModelSpec BUILTIN = ModelSpec.builder().uri(DiagnosticModels.CRASH_ON_NAN)
      .engine(ModelSpec.ENGINE_BUILTIN).input("x", DataType.FP32, -1, 4).build();
  private static final PoolConfig CONFIG = PoolConfig.builder().maxBatchSize(16).maxBatchDelay(Duration.ofMillis(3))
      .maxQueued(100).defaultTimeout(Duration.ofMillis(2500)).maxRequeues(2).build();

  private static <T> T roundTrip(ObjectMapper mapper, T value, Class<T> type) throws Exception {
    return mapper.readValue(mapper.writeValueAsBytes(value), type);
  }

  private static <T> void roundTripsThroughBoth(T value, Class<T> type) throws Exception {
    assertThat(roundTrip(WireCodec.cbor(), value, type)).isEqualTo(value);
    assertThat(roundTrip(WireCodec.json(), value, type)).isEqualTo(value);
  }

  @Test
  void tensorsRequestsAndResponsesRoundTrip() throws Exception {
    roundTripsThroughBoth(FLOATS, Tensor.class);
    roundTripsThroughBoth(STRINGS, Tensor.class);
    roundTripsThroughBoth(new InferenceRequest("r", List.of(FLOATS, INTS), List.of("output"),
        Map.of("priority", 3, "tag", "x", "debug", true)), InferenceRequest.class);
    roundTripsThroughBoth(new InferenceResponse("r", "mlp", "1", List.of(FLOATS),
        Map.of("kiln_node", "a", "kiln_queue_ms", 0.25)), InferenceResponse.class);
  }

  @Test
  void scalarsAndTheirSpecsRoundTripWithShapeEmpty() throws Exception {
    Tensor sr = new Tensor("sr", DataType.INT64, new long[0], new byte[] {(byte) 0x80, 0x3e, 0, 0, 0, 0, 0, 0});
    Tensor tag = new Tensor("tag", DataType.BYTES, new long[0], new byte[] {1, 0, 0, 0, 't'});
    roundTripsThroughBoth(sr, Tensor.class);
    roundTripsThroughBoth(new InferenceRequest("r", List.of(FLOATS, sr, tag), List.of(), Map.of()),
        InferenceRequest.class);
    ModelSpec vad = ModelSpec.builder().uri("models/vad/silero").engine(ModelSpec.ENGINE_ONNX)
        .input("input", DataType.FP32, -1, -1).input("state", DataType.FP32, 2, -1, 128).input("sr", DataType.INT64)
        .output("output", DataType.FP32, -1, 1).output("stateN", DataType.FP32, 2, -1, 128).build();
    roundTripsThroughBoth(vad, ModelSpec.class);
    assertThat(roundTrip(WireCodec.cbor(), vad, ModelSpec.class).inputs().get(2).shape()).isEmpty();
  }

  @Test
  void tensorDataTravelsAsRawBytesInCbor() throws Exception {
    Tensor big = new Tensor("x", DataType.UINT8, new long[] {1 << 16}, new byte[1 << 16]);
    assertThat(WireCodec.cbor().writeValueAsBytes(big).length).isLessThan((1 << 16) + 100);
  }

  @Test
  void tensorsWhoseBytesDoNotFitTheirShapeAreRefused() {
    String json = "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,2],\"data\":\"AAAAAA==\"}";
    assertThatThrownBy(() -> WireCodec.json().readValue(json, Tensor.class)).hasMessageContaining("needs 16 bytes");
    assertThatThrownBy(() -> WireCodec.json().readValue("{\"name\":\"x\",\"datatype\":\"FP99\",\"shape\":[1],\"data\":\"\"}",
        Tensor.class)).hasMessageContaining("FP99");
  }

  @Test
  void specsRoundTripWithTheirPathsAsWritten() throws Exception {
    roundTripsThroughBoth(MLP, ModelSpec.class);
    roundTripsThroughBoth(BUILTIN, ModelSpec.class);
    assertThat(WireCodec.json().writeValueAsString(BUILTIN)).contains("\"uri\":\"builtin:crash-on-nan\"")
        .doesNotContain("builtin\":"); // no derived isBuiltin() property
    assertThat(roundTrip(WireCodec.cbor(), MLP, ModelSpec.class).uri()).isEqualTo(Path.of("models/mlp"));
    roundTripsThroughBoth(CONFIG, PoolConfig.class);
    PoolSpec pool = new PoolSpec("mlp", "1", "node-a", MLP, CONFIG, 2, Resources.gpu(0.5).withCpu(1), -1);
    roundTripsThroughBoth(pool, PoolSpec.class);
    roundTripsThroughBoth(pool.worker(1), WorkerSpec.class);
  }

  @Test
  void statsStatusAndLoadInfoRoundTrip() throws Exception {
    PoolStats stats = new PoolStats(1, 2, 1, 0, 1, 2, 10, 1, 2, 3, 4, 5, 6);
    roundTripsThroughBoth(stats, PoolStats.class);
    ModelLoadInfo info = new ModelLoadInfo("cpu()", Duration.ofMillis(312), Duration.ofNanos(1_234_567), List.of(1, 8),
        ModelSpec.ENGINE_PYTORCH, "2.7.1", ModelSpec.FORMAT_TORCHSCRIPT, OptionalLong.of(19_210), 1_634);
    roundTripsThroughBoth(info, ModelLoadInfo.class);
    roundTripsThroughBoth(new ModelLoadInfo("cpu()", Duration.ZERO, Duration.ZERO, List.of(), "Builtin", "", "builtin",
        OptionalLong.empty()), ModelLoadInfo.class);
    roundTripsThroughBoth(new ModelLoadInfo("cpu()", Duration.ofMillis(3), Duration.ofMillis(500), List.of(1),
        ModelSpec.ENGINE_ONNX, "1.21.1", "onnx", OptionalLong.empty(), 488, List.of("warmup/good.json"),
        List.of("warm-up sample warmup/fp64.json skipped: inputs[0].datatype: input 'input' is FP32, got FP64")),
        ModelLoadInfo.class);
    // From a node that knew no warm-up samples: none, and no problems.
    String older = WireCodec.json().writeValueAsString(info).replaceAll(",\"warmup(Samples|Problems)\":\\[]", "");
    assertThat(older).doesNotContain("warmupSamples");
    assertThat(WireCodec.json().readValue(older, ModelLoadInfo.class)).isEqualTo(info);
    PoolStatus status = new PoolStatus("mlp", "1", "a", "abc", true, false, 2, CONFIG, stats, List.of(
        new WorkerStatus(0, "kiln/pool/mlp@1/a/worker-0", "w0", WorkerState.READY, true, 1, info, "boom"),
        new WorkerStatus(1, "kiln/pool/mlp@1/a/worker-1", null, WorkerState.STARTING, false, 0, null, null)));
    roundTripsThroughBoth(status, PoolStatus.class);
  }

  private static <T> T wire(MessageCodec<T, T> codec, T message) {
    Buffer buf = Buffer.buffer();
    codec.encodeToWire(buf, message);
    return codec.decodeFromWire(0, buf);
  }

  @Test
  void aCallToAManagerCrossesAsItsMethodAndArguments() {
    ActorAsyncMethod1<PoolManager, PoolRequest, InferenceResponse> submit = PoolManager::submit;
    PoolRequest request = new PoolRequest(new InferenceRequest("r", List.of(FLOATS), List.of(), Map.of()), 1500, "b/c/1",
        false, null, null, io.kiln.pools.RequestContext.Priority.LOW);
    CallMessage got = wire(new CallMessage.Codec(), new CallMessage(Lambdas.resolve(submit), submit, new Object[] {request}));
    assertThat(got.args).containsExactly(request);
    assertThat(((PoolRequest) got.args[0]).priority()).isEqualTo(io.kiln.pools.RequestContext.Priority.LOW);
  }

  @Test
  void aTracedRequestCrossesWithItsTrace() {
    ActorAsyncMethod1<PoolManager, PoolRequest, InferenceResponse> submit = PoolManager::submit;
    PoolRequest request = new PoolRequest(new InferenceRequest("", List.of(FLOATS), List.of(), Map.of()), 1500, "b/c/2",
        true, null, new io.kiln.pools.trace.RequestTrace("b/c/2",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "k=v"), null);
    CallMessage got = wire(new CallMessage.Codec(), new CallMessage(Lambdas.resolve(submit), submit, new Object[] {request}));
    assertThat(got.args).containsExactly(request);
    assertThat(((PoolRequest) got.args[0]).requestId()).isEqualTo("b/c/2");
    assertThat(((PoolRequest) got.args[0]).trace().traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
  }

  @Test
  void poolErrorsArriveAsThemselves() {
    Throwable capacity = replyError(new CapacityExceededException("pool queue is full (512 requests waiting)",
        Duration.ofSeconds(3)));
    assertThat(capacity).isInstanceOfSatisfying(CapacityExceededException.class, e -> {
      assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE);
      assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(3));
    }).hasMessage("pool queue is full (512 requests waiting)");
    for (InferenceException.Kind kind : InferenceException.Kind.values()) {
      assertThat(replyError(new InferenceException(kind, "m " + kind))).isExactlyInstanceOf(InferenceException.class)
          .hasMessage("m " + kind).satisfies(e -> assertThat(((InferenceException) e).kind()).isEqualTo(kind));
    }
    assertThat(replyError(new ModelExecutionException("NaN"))).isExactlyInstanceOf(ModelExecutionException.class)
        .hasMessage("NaN");
    assertThat(replyError(new ModelLoadException("no file"))).isExactlyInstanceOf(ModelLoadException.class);
    // A subclass (a runner's SpecMismatchException) arrives as the class the other side knows.
    assertThat(replyError(new ModelExecutionException("output 'y' came back as FLOAT") { }))
        .isExactlyInstanceOf(ModelExecutionException.class).hasMessage("output 'y' came back as FLOAT");
  }

  @Test
  void aResponseCrossesAsTheCallersType() {
    InferenceResponse r = new InferenceResponse("r", "mlp", "1", List.of(FLOATS, INTS), Map.of("kiln_node", "a"));
    assertThat(wire(new ReplyMessage.Codec(), ReplyMessage.ok(r, InferenceResponse.class)).value(InferenceResponse.class))
        .isEqualTo(r);
  }

  private static Throwable replyError(Throwable t) {
    return wire(new ReplyMessage.Codec(), ReplyMessage.failed(t)).error();
  }
}
