package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.PythonTests;
import io.kiln.pools.testsupport.StreamRecorder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code predict_stream} generators in a real Python worker process ({@code python/streaming/model.py}), through
 * a real pool and {@link PoolClient#stream}: each yield is one chunk, pulled only under credit; a raise ends the
 * stream with Python's error and the process goes on; a cancel closes the generator.
 */
@Tag("slow")
class PythonStreamingTest {

  private static final Duration T = Duration.ofSeconds(90);

  /** A request context with {@link #T} to go. */
  private static RequestContext within() {
    return RequestContext.within("", T.toMillis());
  }

  private PoolNodes nodes;
  private PoolClient client;
  private RequestValidator validator;

  @AfterEach
  void stop() {
    if (nodes != null) {
      nodes.close();
    }
  }

  private void start(Map<String, Object> config) {
    ModelSpec model = ModelSpec.builder().uri(PythonTests.testModel("streaming")).engine(ModelSpec.ENGINE_PYTHON)
        .input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 4).streaming(true)
        .python(PythonTests.options().config(config).build()).build();
    validator = new RequestValidator("pystream", model.signature(), 0);
    nodes = new PoolNodes("a");
    nodes.start(spec("pystream", "a", model, PoolConfig.DEFAULTS, 1, 0), 1);
    client = new PoolClient(nodes.node("a"));
  }

  private ResponseStream open(float first, float chunks, StreamRecorder rec) {
    return open(first, chunks, Cancellation.NONE, rec);
  }

  private ResponseStream open(float first, float chunks, Cancellation token, StreamRecorder rec) {
    ValidatedRequest r = validator.validate(new InferenceRequest("p", List.of(Tensor.ofFloats("x", new long[] {1, 4},
        new float[] {first, chunks, 0, 0})), List.of(), Map.of()));
    return client.stream(within().withCancellation(token), "pystream", "1", "a", r, 4,
        PoolClient.DEFAULT_MAX_CHUNK_BYTES, rec);
  }

  @Test
  void eachYieldIsAChunkInOrder() {
    start(Map.of());
    StreamRecorder rec = new StreamRecorder();

    open(0, 12, rec);

    await().atMost(T).until(rec::settled);
    assertThat(rec.error).isNull();
    assertThat(rec.firsts()).containsExactly(0f, 1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f, 9f, 10f, 11f);
    assertThat(rec.chunks.get(5).outputs().get(0).asFloats()).containsExactly(5f, 17f, 5f, 5f);
    assertThat(rec.end).containsEntry("kiln_chunks", 12L);
  }

  @Test
  void aGeneratorThatRaisesEndsItsStreamWithPythonsErrorAndTheProcessGoesOn() {
    start(Map.of());
    StreamRecorder rec = new StreamRecorder();

    open(-1, 10, rec);

    await().atMost(T).until(rec::settled);
    assertThat(rec.chunks).hasSize(2);
    assertThat(rec.error).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INTERNAL))
        .hasMessageContaining("ValueError").hasMessageContaining("asked to fail at chunk 2");
    StreamRecorder next = new StreamRecorder();
    open(0, 2, next);
    await().atMost(T).until(next::settled);
    assertThat(next.end).isNotNull();
  }

  @Test
  void cancellingClosesTheGeneratorAndFreesTheWorker(@TempDir Path dir) {
    Path marker = dir.resolve("closed");
    start(Map.of("delay_s", 0.01, "closed_marker", marker.toString()));
    Cancellation token = Cancellation.create();
    StreamRecorder rec = new StreamRecorder(c -> {
      if (c.parameters().get("kiln_chunk").equals(1L)) {
        token.cancel("the reader left");
      }
    });
    io.vertx.core.Context ctx = nodes.node("a").vertx().getOrCreateContext();
    ctx.runOnContext(v -> open(0, 100_000, token, rec));

    await().atMost(T).until(() -> Files.exists(marker) && Files.readString(marker).contains("ended"));
    StreamRecorder next = new StreamRecorder();
    open(0, 2, next);
    await().atMost(T).until(next::settled);
    assertThat(next.end).as("the worker is free again").isNotNull();
    assertThat(rec.chunks.size()).isLessThan(100);
  }

  @Test
  void aStreamingSpecWhoseClassHasNoPredictStreamFailsItsLoadSayingSo() {
    ModelSpec spec = PythonTests.faulty(Map.of()).streaming(true).build();

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> ModelRunners.load(spec, List.of()).close())
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("predict_stream")
        .hasMessageContaining("streaming: true");
  }
}
