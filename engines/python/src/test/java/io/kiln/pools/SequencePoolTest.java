package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Sequences with implicit state (issue #36) in a real pool of Silero VAD v5 workers: the pool keeps each sequence's
 * {@code state} on the worker that holds it, and every chunk's speech probability equals ONNX Runtime's own session
 * fed its {@code stateN} back by hand; interleaved sequences keep their states apart; idle sequences are freed;
 * a worker killed under a sequence makes its next request fail naming it; bad parameters are refused naming them. A
 * Python accumulator, whose state is batched on its first dimension, shows sequences of one worker sharing a call.
 */
@Tag("slow")
class SequencePoolTest {

  private static final int CHUNK = 512;
  private static ModelSpec plain;
  private static OrtEnvironment env;
  private static OrtSession direct;

  @BeforeAll
  static void load() throws OrtException {
    plain = ProjectModels.sileroVad().build();
    env = OrtEnvironment.getEnvironment();
    direct = env.createSession(plain.uri().resolve("model.onnx").toString(), new OrtSession.SessionOptions());
  }

  @AfterAll
  static void close() throws OrtException {
    if (direct != null) {
      direct.close();
    }
  }

  static ModelSpec vad(Duration idle, int max) {
    return plain.toBuilder().sequence(new SequenceSpec(idle, max,
        List.of(new SequenceSpec.StateSpec("state", "stateN", 0)))).build();
  }

  /**
   * {@code chunks} chunks of 16 kHz audio: silence, then a voiced buzz (a 120 Hz pulse train through two formant-like
   * resonances, with noise) whose loudness changes, so that the probabilities move; seeded.
   */
  static float[][] audio(long seed, int chunks) {
    Random r = new Random(seed);
    float[][] out = new float[chunks][CHUNK];
    double f0 = 100 + r.nextInt(60);
    double y1 = 0;
    double y2 = 0;
    for (int c = 0; c < chunks; c++) {
      double gain = c < 2 ? 0.001 : 0.2 + 0.3 * Math.abs(Math.sin(c * 0.7 + seed));
      for (int i = 0; i < CHUNK; i++) {
        int n = c * CHUNK + i;
        double pulse = (n % (int) (16_000 / f0)) == 0 ? 1 : 0;
        double y = pulse + 1.6 * y1 * Math.cos(2 * Math.PI * 700 / 16_000) - 0.81 * y2;
        y2 = y1;
        y1 = y;
        out[c][i] = (float) (gain * (0.15 * y + 0.02 * r.nextGaussian()));
      }
    }
    return out;
  }

  /** ONNX Runtime's own loop: each chunk with the previous chunk's stateN (zeros first). */
  static float[] directly(float[][] chunks) throws OrtException {
    return io.kiln.pools.testsupport.SileroVadReference.probabilities(env, direct, chunks);
  }

  static InferenceRequest chunk(float[] audio, Object id, boolean start, boolean end) {
    Tensor sr = new Tensor("sr", DataType.INT64, new long[0],
        ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(16_000).array());
    Map<String, Object> params = new HashMap<>();
    if (id != null) {
      params.put(SequenceSpec.SEQUENCE_ID, id);
    }
    if (start) {
      params.put(SequenceSpec.SEQUENCE_START, true);
    }
    if (end) {
      params.put(SequenceSpec.SEQUENCE_END, true);
    }
    return new InferenceRequest(null, List.of(Tensor.ofFloats("input", new long[] {1, audio.length}, audio), sr),
        List.of(), params);
  }

  static CompletableFuture<InferenceResponse> send(ActorHandle<PoolManager> m, InferenceRequest r) {
    return m.callAsync(PoolManager::infer, r, 30_000L).toCompletableFuture();
  }

  static float probability(InferenceResponse r) {
    assertThat(r.outputs()).as("the state output stays on the worker").extracting(Tensor::name)
        .containsExactly("output");
    return r.outputs().get(0).asFloats()[0];
  }

  @Test
  void interleavedSequencesOnTwoWorkersEachEqualOnnxRuntimeFedItsStateByHand() throws OrtException {
    try (PoolNodes nodes = new PoolNodes("a")) {
      ActorHandle<PoolManager> m = nodes.start(spec("vad", "a", vad(Duration.ofMinutes(1), 16),
          PoolConfig.builder().maxBatchSize(4).maxBatchDelay(Duration.ofMillis(5)).build(), 2, 0), 2);
      int streams = 3;
      int chunks = 12;
      float[][][] audio = new float[streams][][];
      float[][] want = new float[streams][];
      for (int s = 0; s < streams; s++) {
        audio[s] = audio(s + 1, chunks);
        want[s] = directly(audio[s]);
      }
      float[][] got = new float[streams][chunks];
      for (int c = 0; c < chunks; c++) {
        // Each sequence's chunk c is sent before any answer of this round: they interleave in the pool.
        List<CompletableFuture<InferenceResponse>> round = new ArrayList<>();
        for (int s = 0; s < streams; s++) {
          Object id = s == 0 ? (Object) 7L : "stream-" + s;
          round.add(send(m, chunk(audio[s][c], id, c == 0, c == chunks - 1)));
        }
        for (int s = 0; s < streams; s++) {
          got[s][c] = probability(result(round.get(s), PoolNodes.WAIT));
        }
      }
      for (int s = 0; s < streams; s++) {
        for (int c = 0; c < chunks; c++) {
          assertThat((double) got[s][c]).as("sequence %d chunk %d", s, c)
              .isCloseTo(want[s][c], org.assertj.core.api.Assertions.within(1e-6));
        }
      }
      assertThat(maxSpread(want)).as("the audio moves the probabilities (else the check proves little)")
          .isGreaterThan(0.05);
      assertThat(counter(nodes, "kiln.pool.sequences.started")).isEqualTo(3);
      assertThat(counter(nodes, "kiln.pool.sequences.ended")).isEqualTo(3);
      assertThat(open(nodes)).isZero();
      for (int i = 0; i < 2; i++) {
        assertThat(heldOn(nodes, i)).as("worker %d holds no state after sequence_end", i).isZero();
      }
      // Both workers held sequences: the pool spread them by how many each held.
      assertThat(result(m.call(PoolManager::status)).stats().completed()).isEqualTo(streams * chunks);
    }
  }

  @Test
  void aSequenceOfRequestsSentAllAtOnceRunsInOrder() throws OrtException {
    try (PoolNodes nodes = new PoolNodes("a")) {
      ActorHandle<PoolManager> m = nodes.start(spec("vad", "a", vad(Duration.ofMinutes(1), 16),
          PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ofMillis(5)).build(), 1, 0), 1);
      float[][] audio = audio(42, 10);
      float[] want = directly(audio);
      List<CompletableFuture<InferenceResponse>> all = new ArrayList<>();
      for (int c = 0; c < audio.length; c++) {
        all.add(send(m, chunk(audio[c], "burst", c == 0, false)));
      }
      for (int c = 0; c < audio.length; c++) {
        assertThat((double) probability(result(all.get(c), PoolNodes.WAIT))).as("chunk %d", c)
            .isCloseTo(want[c], org.assertj.core.api.Assertions.within(1e-6));
      }
    }
  }

  @Test
  void anIdleSequenceIsFreedOnItsWorkerAndItsNextRequestIsRefusedNamingTheId() {
    try (PoolNodes nodes = new PoolNodes("a")) {
      ActorHandle<PoolManager> m = nodes.start(spec("vad", "a", vad(Duration.ofMillis(300), 16),
          PoolConfig.DEFAULTS, 1, 0), 1);
      float[][] audio = audio(3, 2);
      result(send(m, chunk(audio[0], "idle", true, false)), PoolNodes.WAIT);
      assertThat(heldOn(nodes, 0)).isEqualTo(1);

      await().atMost(PoolNodes.WAIT).until(() -> open(nodes) == 0);
      await().atMost(PoolNodes.WAIT).until(() -> heldOn(nodes, 0) == 0);
      assertThat(counter(nodes, "kiln.pool.sequences.expired")).isEqualTo(1);

      assertThat(failure(send(m, chunk(audio[1], "idle", false, false)), PoolNodes.WAIT))
          .isInstanceOfSatisfying(InferenceException.class, e -> {
            assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT);
            assertThat(e.getMessage()).contains("parameters.sequence_id", "'idle'", "idle_timeout_ms");
          });
    }
  }

  @Test
  void aKilledWorkerMakesItsSequencesNextRequestFailNamingTheSequenceNeverRestartingFromZeros() {
    try (PoolNodes nodes = new PoolNodes("a")) {
      PoolSpec spec = spec("vad", "a", vad(Duration.ofMinutes(1), 16), PoolConfig.DEFAULTS, 1, 3);
      ActorHandle<PoolManager> m = nodes.start(spec, 1);
      float[][] audio = audio(5, 3);
      result(send(m, chunk(audio[0], 99L, true, false)), PoolNodes.WAIT);
      ActorHandle<ModelWorker> worker = result(nodes.node("a").getActor(PoolManager.NAMESPACE,
          PoolNames.worker("vad", "1", "a", 0), ModelWorker.class), PoolNodes.WAIT);

      result(nodes.node("a").kill(worker, true), PoolNodes.WAIT);
      await().atMost(PoolNodes.WAIT).until(() -> result(worker.info()).restarts() == 1);
      PoolNodes.awaitReady(m, 1);

      assertThat(failure(send(m, chunk(audio[1], 99L, false, false)), PoolNodes.WAIT))
          .isInstanceOfSatisfying(InferenceException.class, e -> {
            assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE);
            assertThat(e.getMessage()).contains("sequence '99' was lost", "sequence_start");
          });
      assertThat(failure(send(m, chunk(audio[2], 99L, false, false)), PoolNodes.WAIT))
          .as("and so does every later one").hasMessageContaining("sequence '99' was lost");
      assertThat(counter(nodes, "kiln.pool.sequences.lost")).isEqualTo(1);
      // Started again, it runs from the initial state: as ONNX Runtime's loop from zeros does.
      assertThat(probability(result(send(m, chunk(audio[0], 99L, true, true)), PoolNodes.WAIT))).isNotNaN();
    }
  }

  @Test
  void badSequenceParametersAreRefusedNamingTheParameterAndTooManySequencesAreRefusedForCapacity() {
    try (PoolNodes nodes = new PoolNodes("a")) {
      ActorHandle<PoolManager> m = nodes.start(spec("vad", "a", vad(Duration.ofMinutes(1), 2),
          PoolConfig.DEFAULTS, 1, 0), 1);
      float[] a = audio(1, 1)[0];
      assertThat(failure(send(m, chunk(a, null, true, false)), PoolNodes.WAIT))
          .hasMessageContaining("parameters.sequence_id: required");
      InferenceRequest startNotBool = new InferenceRequest(null, chunk(a, 1L, false, false).inputs(), List.of(),
          Map.of(SequenceSpec.SEQUENCE_ID, 1L, SequenceSpec.SEQUENCE_START, "yes"));
      assertThat(failure(send(m, startNotBool), PoolNodes.WAIT)).hasMessageContaining("parameters.sequence_start");
      assertThat(failure(send(m, chunk(a, 0L, true, false)), PoolNodes.WAIT))
          .hasMessageContaining("parameters.sequence_id: must be a uint64 above 0");
      assertThat(failure(send(m, chunk(a, "never-started", false, false)), PoolNodes.WAIT))
          .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind())
              .isEqualTo(InferenceException.Kind.INVALID_INPUT))
          .hasMessageContaining("no open sequence 'never-started'");
      InferenceRequest withState = new InferenceRequest(null, List.of(chunk(a, 1L, true, false).inputs().get(0),
          Tensor.ofFloats("state", new long[] {2, 1, 128}, new float[256]), chunk(a, 1L, true, false).inputs().get(1)),
          List.of(), Map.of(SequenceSpec.SEQUENCE_ID, 1L, SequenceSpec.SEQUENCE_START, true));
      assertThat(failure(send(m, withState), PoolNodes.WAIT)).as("the state is the pool's, not the client's")
          .hasMessageContaining("state");

      result(send(m, chunk(a, 1L, true, false)), PoolNodes.WAIT);
      result(send(m, chunk(a, 2L, true, false)), PoolNodes.WAIT);
      assertThat(failure(send(m, chunk(a, 3L, true, false)), PoolNodes.WAIT))
          .isInstanceOfSatisfying(CapacityExceededException.class, e -> {
            assertThat(e.retryAfter()).isPositive();
            assertThat(e.getMessage()).contains("max_sequences");
          });
      result(send(m, chunk(a, 2L, false, true)), PoolNodes.WAIT);
      result(send(m, chunk(a, 3L, true, false)), PoolNodes.WAIT);
      assertThat(open(nodes)).isEqualTo(2);
    }
  }

  @Test
  void sequencesOnOneWorkerBatchTogetherWithTheirStatesStackedWhenTheStateIsBatchedOnItsFirstDimension() {
    io.kiln.pools.testsupport.PythonTests.interpreter(); // fail here, clearly, without Python and numpy
    ModelSpec accumulator = ModelSpec.builder().uri(io.kiln.pools.testsupport.PythonTests.testModel("accumulator"))
        .engine(ModelSpec.ENGINE_PYTHON).python(io.kiln.pools.testsupport.PythonTests.options().build())
        .input("x", DataType.FP32, -1, 1).input("h", DataType.FP32, -1, 1)
        .output("y", DataType.FP32, -1, 1).output("h_next", DataType.FP32, -1, 1).output("rows", DataType.FP32, -1, 1)
        .sequence(new SequenceSpec(Duration.ofMinutes(1), 8, List.of(new SequenceSpec.StateSpec("h", "h_next", 10))))
        .build();
    try (PoolNodes nodes = new PoolNodes("a")) {
      // Three rows fill a batch at once; fewer would wait a whole second for company.
      ActorHandle<PoolManager> m = nodes.start(spec("acc", "a", accumulator, PoolConfig.builder().maxBatchSize(3)
          .maxBatchDelay(Duration.ofSeconds(1)).build(), 1, 0), 1);
      float[] sums = {10, 10, 10};
      for (int round = 0; round < 4; round++) {
        List<CompletableFuture<InferenceResponse>> answers = new ArrayList<>();
        for (int s = 0; s < 3; s++) {
          float x = (s + 1) * (round + 1);
          sums[s] += x;
          Map<String, Object> params = new HashMap<>(Map.of(SequenceSpec.SEQUENCE_ID, "acc-" + s));
          params.put(SequenceSpec.SEQUENCE_START, round == 0);
          answers.add(send(m, new InferenceRequest(null, List.of(Tensor.ofFloats("x", new long[] {1, 1},
              new float[] {x})), List.of(), params)));
        }
        for (int s = 0; s < 3; s++) {
          InferenceResponse r = result(answers.get(s), PoolNodes.WAIT);
          assertThat(r.outputs()).extracting(Tensor::name).containsExactly("y", "rows");
          assertThat(r.outputs().get(0).asFloats()).as("sequence %d round %d: its own running sum from init 10", s,
              round).containsExactly(sums[s]);
          assertThat(r.outputs().get(1).asFloats()).as("the three sequences' rows shared one call").containsExactly(3f);
        }
      }
    }
  }

  private static double maxSpread(float[][] probs) {
    double lo = 1;
    double hi = 0;
    for (float[] p : probs) {
      for (float x : p) {
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    }
    return hi - lo;
  }

  private static double counter(PoolNodes nodes, String name) {
    Counter c = nodes.registry("a").find(name).tag("deployment", "vad").counter();
    return c == null ? 0 : c.count();
  }

  private static double open(PoolNodes nodes) {
    Gauge g = nodes.registry("a").find("kiln.pool.sequences.open").tag("deployment", "vad").gauge();
    return g == null ? -1 : g.value();
  }

  private static int heldOn(PoolNodes nodes, int index) {
    ActorHandle<ModelWorker> w = result(nodes.node("a").getActor(PoolManager.NAMESPACE,
        PoolNames.worker("vad", "1", "a", index), ModelWorker.class), PoolNodes.WAIT);
    return result(w.call(ModelWorker::openSequences), PoolNodes.WAIT);
  }
}
