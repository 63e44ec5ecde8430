package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.builtin;
import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.engines.builtin.impl.BuiltinModels;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.StreamRecorder;
import io.micrometer.core.instrument.DistributionSummary;
import io.vertx.core.Context;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Streams through real pools: a client on node b, the pool of {@code builtin:chunks} on node a, chunks sent by
 * the worker straight to b's stream endpoint under credit.
 */
@Tag("slow")
class PoolStreamingTest {

  private static final Duration T = Duration.ofSeconds(60);

  /** A request context with {@link #T} to go. */
  private static RequestContext within() {
    return RequestContext.within("", T.toMillis());
  }

  private PoolNodes nodes;
  private PoolClient fromB;
  private RequestValidator validator;

  @BeforeEach
  void start() {
    nodes = new PoolNodes("a", "b");
    fromB = new PoolClient(nodes.node("b"));
  }

  @AfterEach
  void stop() {
    nodes.close();
  }

  private void startPool(int workers, int batch) {
    ModelSpec model = builtin(BuiltinModels.CHUNKS);
    validator = new RequestValidator("chunks", model.signature(), 0);
    PoolConfig config = PoolConfig.builder().maxBatchSize(batch).maxBatchDelay(Duration.ofMillis(batch > 1 ? 200 : 0))
        .build();
    nodes.start(spec("chunks", "a", model, config, workers, 0), workers);
  }

  private ValidatedRequest zeros(Map<String, Object> params) {
    return validator.validate(new InferenceRequest("r", List.of(Tensor.ofFloats("x", new long[] {1, 4},
        new float[4])), List.of(), params));
  }

  private ResponseStream open(Map<String, Object> params, int window, StreamRecorder rec) {
    return open(params, window, Cancellation.NONE, rec);
  }

  /** A stream withdrawn by cancelling {@code token}. */
  private ResponseStream open(Map<String, Object> params, int window, Cancellation token, StreamRecorder rec) {
    return fromB.stream(within().withCancellation(token), "chunks", "1", "a", zeros(params), window,
        PoolClient.DEFAULT_MAX_CHUNK_BYTES, rec);
  }

  @Test
  void chunksArriveInOrderAndTheStreamEnds() {
    startPool(1, 1);
    StreamRecorder rec = new StreamRecorder();

    open(Map.of("chunks", 40), 4, rec);

    await().atMost(T).until(rec::settled);
    assertThat(rec.error).isNull();
    assertThat(rec.firsts()).containsExactlyElementsOf(IntStream.range(0, 40).mapToObj(i -> (float) i).toList());
    assertThat(rec.chunks.get(3).parameters()).containsEntry("kiln_node", "a").containsEntry("kiln_chunk", 3L);
    assertThat(rec.chunks.get(0).id()).isEqualTo("r");
    assertThat(rec.end).containsEntry("kiln_chunks", 40L);
    await().until(() -> fromB.openStreams() == 0);
  }

  @Test
  void aModelErrorMidStreamEndsItWithThatErrorAndTheWorkerServesOn() {
    startPool(1, 1);
    StreamRecorder rec = new StreamRecorder();

    open(Map.of("chunks", 10, "fail_at", 3), 16, rec);

    await().atMost(T).until(rec::settled);
    assertThat(rec.chunks).hasSize(3);
    assertThat(rec.error).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INTERNAL)).hasMessageContaining("fail_at");
    StreamRecorder next = new StreamRecorder();
    open(Map.of("chunks", 2), 16, next);
    await().atMost(T).until(next::settled);
    assertThat(next.end).isNotNull();
  }

  @Test
  void aWorkerCrashMidStreamIsAnErrorNotASilentEnd() {
    startPool(1, 1);
    StreamRecorder rec = new StreamRecorder();

    open(Map.of("chunks", 10, "crash_at", 2), 16, rec);

    await().atMost(T).until(rec::settled);
    assertThat(rec.chunks).hasSize(2);
    assertThat(rec.error).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE));
  }

  @Test
  void cancellingTheTokenMidStreamFreesTheWorkerForTheNextRequest() {
    startPool(1, 1);
    Cancellation token = Cancellation.create();
    StreamRecorder rec = new StreamRecorder(c -> {
      if (c.parameters().get("kiln_chunk").equals(2L)) {
        token.cancel("the reader left"); // on the stream's context: it hears nothing more from here on
      }
    });
    // Long enough to hold the one worker for the whole test if the cancel did not reach it.
    open(Map.of("chunks", 100_000, "delay_ms", 5), 16, token, rec);

    StreamRecorder next = new StreamRecorder();
    await().atMost(T).until(() -> rec.chunks.size() >= 3);
    open(Map.of("chunks", 3), 16, next);

    await().atMost(T).until(next::settled);
    assertThat(next.end).as("the cancelled stream freed the only worker").isNotNull();
    assertThat(rec.settled()).as("a cancelled stream hears nothing more").isFalse();
    assertThat(rec.chunks).as("not one chunk after the one that cancelled").hasSize(3);
    await().atMost(T).until(() -> fromB.openStreams() == 0);
  }

  @Test
  void aTokenCancelledFromAnotherThreadMidStreamFreesItsSlotAndItsQueuedRequestNeverRuns() {
    startPool(1, 1);
    Cancellation running = Cancellation.create();
    StreamRecorder a = new StreamRecorder();
    open(Map.of("chunks", 100_000, "delay_ms", 5), 16, running, a);
    await().atMost(T).until(() -> a.chunks.size() >= 2);
    Cancellation queued = Cancellation.create();
    StreamRecorder b = new StreamRecorder();
    open(Map.of("chunks", 3), 16, queued, b);
    await().atMost(T).until(() -> result(fromB.stats("chunks", "1", "a")).queueDepth() == 1);

    queued.cancel("gave up waiting"); // this test's thread: neither the stream's context nor the pool's
    await().atMost(T).until(() -> result(fromB.stats("chunks", "1", "a")).queueDepth() == 0);
    assertThat(result(fromB.stats("chunks", "1", "a")).cancelled()).as("unqueued, counted cancelled").isEqualTo(1);
    running.cancel("the reader left");

    StreamRecorder next = new StreamRecorder();
    open(Map.of("chunks", 3), 16, next);
    await().atMost(T).until(next::settled);
    assertThat(next.end).as("the cancelled stream freed the worker's one slot").isNotNull();
    assertThat(a.settled()).isFalse();
    assertThat(b.chunks).as("unqueued, it never ran").isEmpty();
    assertThat(b.settled()).isFalse();
    await().atMost(T).until(() -> fromB.openStreams() == 0);
  }

  @Test
  void aReaderThatStopsConsumingHoldsTheWorkerAtTheWindow() {
    startPool(1, 1);
    Context ctx = nodes.node("b").vertx().getOrCreateContext();
    AtomicReference<ResponseStream> stream = new AtomicReference<>();
    StreamRecorder rec = new StreamRecorder(c -> {
      if (c.parameters().get("kiln_chunk").equals(0L)) {
        stream.get().pause();
      }
    });
    ctx.runOnContext(v -> stream.set(open(Map.of("chunks", 200), 4, rec)));

    // Paused at chunk 0, having granted nothing: the worker may send its window of 4, never more.
    await().atMost(T).until(() -> rec.chunks.size() >= 4);
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(10)).until(() -> rec.chunks.size() == 4);

    ctx.runOnContext(v -> stream.get().resume());
    await().atMost(T).until(rec::settled);
    assertThat(rec.firsts()).hasSize(200);
    assertThat(rec.end).isNotNull();
  }

  @Test
  void aNewStreamJoinsTheRunningStepsAndTheBatchSizeBoundsHowManyShareThem() {
    startPool(1, 2);
    Context ctx = nodes.node("b").vertx().getOrCreateContext();
    Cancellation longOne = Cancellation.create();
    StreamRecorder a = new StreamRecorder();
    ctx.runOnContext(v -> open(Map.of("chunks", 100_000, "delay_ms", 5), 16, longOne, a));
    await().atMost(T).until(() -> a.chunks.size() >= 3);

    // One worker, already busy with a: b joins its steps and ends while a goes on.
    StreamRecorder b = new StreamRecorder();
    open(Map.of("chunks", 5), 16, b);
    await().atMost(T).until(b::settled);
    assertThat(b.end).isNotNull();
    assertThat(a.settled()).isFalse();

    // With a and c sharing the worker, its two slots are taken: d waits until one of them leaves.
    StreamRecorder c = new StreamRecorder();
    open(Map.of("chunks", 100_000, "delay_ms", 5), 16, c);
    await().atMost(T).until(() -> c.chunks.size() >= 2);
    StreamRecorder d = new StreamRecorder();
    open(Map.of("chunks", 3), 16, d);
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(10)).until(() -> d.chunks.isEmpty());
    assertThat(result(fromB.stats("chunks", "1", "a")).queueDepth()).isEqualTo(1);

    longOne.cancel("done with it");
    await().atMost(T).until(d::settled);
    assertThat(d.end).as("d took a's slot").isNotNull();
    assertThat(c.settled()).isFalse();
  }

  @Test
  void streamsJoiningAndLeavingMidWayShareModelStepsAndEachGetsItsChunksInOrder() {
    startPool(1, 4);
    StreamRecorder a = new StreamRecorder();
    open(Map.of("chunks", 400, "delay_ms", 5), 16, a);
    await().atMost(T).until(() -> a.chunks.size() >= 3);

    // b joins a's steps mid-way and leaves before it; c joins after b left.
    StreamRecorder b = new StreamRecorder();
    open(Map.of("chunks", 10, "delay_ms", 5), 16, b);
    await().atMost(T).until(b::settled);
    StreamRecorder c = new StreamRecorder();
    open(Map.of("chunks", 30, "delay_ms", 5), 16, c);
    await().atMost(T).until(() -> a.settled() && c.settled());

    for (StreamRecorder r : List.of(a, b, c)) {
      assertThat(r.error).isNull();
    }
    assertThat(a.firsts()).containsExactlyElementsOf(IntStream.range(0, 400).mapToObj(i -> (float) i).toList());
    assertThat(b.firsts()).containsExactlyElementsOf(IntStream.range(0, 10).mapToObj(i -> (float) i).toList());
    assertThat(c.firsts()).containsExactlyElementsOf(IntStream.range(0, 30).mapToObj(i -> (float) i).toList());
    DistributionSummary steps = nodes.registry("a").find(ModelWorker.STEP_STREAMS).tag("deployment", "chunks")
        .summary();
    assertThat(steps).isNotNull();
    // Every chunk and every end is one stream's share of a step; b shared a's steps, so there were fewer steps.
    assertThat(steps.totalAmount()).isEqualTo(400 + 10 + 30 + 3);
    assertThat(steps.count()).isLessThan(400 + 10 + 30 + 3);
  }

  @Test
  void aStreamingPoolRefusesInferAndOthersRefuseStreams() {
    startPool(1, 1);
    Throwable infer = failure(fromB.infer(within(), "chunks", "1", "a", zeros(Map.of())));
    assertThat(infer).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT)).hasMessageContaining("streams");
  }

  @Test
  void aChunkOverTheSizeLimitFailsTheStreamTooLarge() {
    startPool(1, 1);
    StreamRecorder rec = new StreamRecorder();

    fromB.stream(within(), "chunks", "1", "a", zeros(Map.of("chunks", 3)), 16, 15, rec); // a chunk is 16 bytes

    await().atMost(T).until(rec::settled);
    assertThat(rec.chunks).isEmpty();
    assertThat(rec.error).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.TOO_LARGE)).hasMessageContaining("limit of 15");
  }

  @Test
  void theWorkersNodeDyingMidStreamIsAnErrorAtTheReceiver() {
    startPool(1, 1);
    StreamRecorder rec = new StreamRecorder();
    open(Map.of("chunks", 100_000, "delay_ms", 5), 16, rec);
    await().atMost(T).until(() -> rec.chunks.size() >= 2);

    nodes.cluster.crash("a");

    await().atMost(T).until(rec::settled);
    assertThat(rec.error).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE));
  }

  @Test
  void aPausedStreamKeepsItsWorkerButAHungStepGetsItRestarted() {
    ModelSpec model = builtin(BuiltinModels.CHUNKS);
    validator = new RequestValidator("chunks", model.signature(), 0);
    HealthSpec health = new HealthSpec(Duration.ofMillis(200), Duration.ofMillis(150));
    io.kiln.runtime.ActorHandle<PoolManager> m = nodes.start(new PoolSpec("chunks", "1", "a", model,
        PoolConfig.DEFAULTS, 1, io.kiln.runtime.Resources.cpu(1), 3, health), 1);
    Context ctx = nodes.node("b").vertx().getOrCreateContext();
    AtomicReference<ResponseStream> stream = new AtomicReference<>();
    Cancellation token = Cancellation.create();
    StreamRecorder paused = new StreamRecorder(c -> stream.get().pause());
    ctx.runOnContext(v -> stream.set(open(Map.of("chunks", 100), 2, token, paused)));

    // Waiting for credit many health periods long is not being stuck.
    await().atMost(T).until(() -> paused.chunks.size() == 2);
    await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(10))
        .until(() -> result(m.call(PoolManager::status)).lastRepair() == null);
    token.cancel("done with it");

    // One step of 3 s, twenty times the health timeout, is.
    StreamRecorder hung = new StreamRecorder();
    open(Map.of("chunks", 2, "delay_ms", 3000), 16, hung);
    await().atMost(T).until(() -> result(m.call(PoolManager::status)).lastRepair() != null);
    assertThat(result(m.call(PoolManager::status)).lastRepair()).contains("stuck");
    await().atMost(T).until(hung::settled);
    assertThat(hung.error).isInstanceOf(InferenceException.class);
  }
}
