package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import ai.onnxruntime.OrtException;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonObject;
import io.vertx.grpc.common.GrpcStatus;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #36's stateful models through the front door: {@code deploy/examples/vad/vad.yaml} (Silero VAD v5 with its
 * {@code state} kept on the workers) on two assembled nodes, real speech (espeak-ng's voice, resampled by sox to
 * 16 kHz) streamed as 512-sample chunks, one sequence over HTTP JSON, one over the HTTP binary extension, one over
 * gRPC, interleaved and each chunk sent through the two nodes' gateways in turn: every chunk's speech probability
 * equals a plain ONNX Runtime loop that feeds {@code stateN} back by hand (within 1e-6). Bad sequence parameters get
 * 400 (gRPC INVALID_ARGUMENT) naming them; a sequence whose node died fails naming the sequence.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
@Tag("slow")
class SequencesEndToEndTest {

  static final Path EXAMPLE = VadAudio.EXAMPLE;
  static final int CHUNK = VadAudio.CHUNK;
  static final String INFER = "/v2/models/vad/infer";

  private ServingCluster cluster;
  private final Http http = new Http();
  private OipGrpc grpc;
  private float[] speech;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    VadAudio.requireModel();
    speech = VadAudio.speech(dir);
    cluster = ServingCluster.start("node-1", "node-2");
    ServingCluster.join(cluster.node("node-1").serve().apply(Files.readString(EXAMPLE), EXAMPLE, false));
    cluster.awaitReady("vad", 2);
    grpc = new OipGrpc();
  }

  @AfterAll
  void stop() {
    if (grpc != null) {
      grpc.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  /** The recording cut into 512-sample chunks, starting {@code offset} samples in (so the streams differ). */
  float[][] chunks(int offset) {
    return VadAudio.chunks(speech, offset);
  }

  float[] directly(float[][] chunks) throws OrtException {
    return VadAudio.directly(chunks);
  }

  static OipRequest chunk(float[] audio, Object id, boolean start, boolean end) {
    OipRequest r = OipRequest.create().input(OipRequest.Input.fp32("input", new long[] {1, CHUNK}, audio))
        .input(OipRequest.Input.int64("sr", new long[0], 16_000));
    if (id != null) {
      r = r.parameter("sequence_id", id);
    }
    if (start) {
      r = r.parameter("sequence_start", true);
    }
    if (end) {
      r = r.parameter("sequence_end", true);
    }
    return r;
  }

  int port(int i) {
    return cluster.node(i % 2 == 0 ? "node-1" : "node-2").httpPort();
  }

  int grpcPort(int i) {
    return cluster.node(i % 2 == 0 ? "node-1" : "node-2").grpcPort();
  }

  float viaJson(int gateway, OipRequest r) {
    Http.Response resp = http.postJson(port(gateway), INFER, r.json());
    assertThat(resp.status()).as(resp.text()).isEqualTo(200);
    return only(resp.json());
  }

  float viaBinary(int gateway, OipRequest r) {
    OipRequest.Binary b = r.binary();
    Http.Response resp = http.post(port(gateway), INFER, "application/octet-stream", b.body(),
        "Inference-Header-Content-Length", b.headerLengthValue());
    assertThat(resp.status()).as(resp.text()).isEqualTo(200);
    return only(resp.json());
  }

  static float only(JsonObject answer) {
    assertThat(answer.getJsonArray("outputs")).as("the state output stays on the worker: %s", answer).hasSize(1);
    JsonObject out = answer.getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getString("name")).isEqualTo("output");
    return out.getJsonArray("data").getNumber(0).floatValue();
  }

  float viaGrpc(int gateway, ModelInferRequest r) {
    ModelInferResponse resp = ServingCluster.join(grpc.at(grpcPort(gateway)).modelInfer(r).toCompletionStage());
    assertThat(resp.getOutputsList()).extracting(ModelInferResponse.InferOutputTensor::getName)
        .containsExactly("output");
    if (resp.getRawOutputContentsCount() > 0) {
      byte[] raw = resp.getRawOutputContents(0).toByteArray();
      return Http.floats(raw, 0, raw.length)[0];
    }
    return resp.getOutputs(0).getContents().getFp32Contents(0);
  }

  /** A uint64 id above Long.MAX_VALUE, as Triton's clients send it over gRPC (uint64_param). */
  static ModelInferRequest withUint64Id(ModelInferRequest r, BigInteger id) {
    return r.toBuilder().putParameters("sequence_id", InferParameter.newBuilder().setUint64Param(id.longValue())
        .build()).build();
  }

  @Test
  void speechStreamedOverJsonBinaryAndGrpcThroughBothGatewaysEqualsOnnxRuntimeFedItsStateByHand() throws Exception {
    float[][] a = chunks(0);
    float[][] b = chunks(CHUNK / 2);
    float[][] c = chunks(CHUNK / 3);
    int n = Math.min(a.length, Math.min(b.length, c.length));
    float[] wantA = directly(Arrays.copyOf(a, n));
    float[] wantB = directly(Arrays.copyOf(b, n));
    float[] wantC = directly(Arrays.copyOf(c, n));
    BigInteger bigId = BigInteger.ONE.shiftLeft(63).add(BigInteger.valueOf(5));
    PromText before = metrics();
    float[] gotA = new float[n];
    float[] gotB = new float[n];
    float[] gotC = new float[n];
    for (int i = 0; i < n; i++) {
      boolean first = i == 0;
      boolean last = i == n - 1;
      gotA[i] = viaJson(i, chunk(a[i], 4242L, first, last));
      gotB[i] = viaBinary(i + 1, chunk(b[i], "binary-stream", first, last));
      ModelInferRequest g = chunk(c[i], null, first, last).grpcRaw("vad");
      gotC[i] = viaGrpc(i, withUint64Id(g, bigId));
    }
    for (int i = 0; i < n; i++) {
      assertThat((double) gotA[i]).as("JSON chunk %d", i).isCloseTo(wantA[i], within(1e-6));
      assertThat((double) gotB[i]).as("binary chunk %d", i).isCloseTo(wantB[i], within(1e-6));
      assertThat((double) gotC[i]).as("gRPC chunk %d", i).isCloseTo(wantC[i], within(1e-6));
    }
    // The words are there: the opening silence is not speech, the sentence is.
    assertThat(wantA[0]).as("silence").isLessThan(0.2f);
    float max = 0;
    for (float p : wantA) {
      max = Math.max(max, p);
    }
    assertThat(max).as("speech").isGreaterThan(0.8f);

    PromText after = metrics();
    assertThat(after.sum("kiln_pool_sequences_started_total") - before.sum("kiln_pool_sequences_started_total"))
        .isEqualTo(3);
    assertThat(after.sum("kiln_pool_sequences_ended_total") - before.sum("kiln_pool_sequences_ended_total"))
        .isEqualTo(3);
    assertThat(after.sum("kiln_pool_sequences_open")).isZero();
  }

  @Test
  void badSequenceParametersGet400NamingThemOverHttpAndInvalidArgumentOverGrpc() {
    float[] audio = chunks(0)[0];
    Http.Response missing = http.postJson(port(0), INFER, chunk(audio, null, true, false).json());
    assertThat(missing.status()).as(missing.text()).isEqualTo(400);
    assertThat(missing.json().getString("error")).contains("parameters.sequence_id", "required");

    Http.Response unknown = http.postJson(port(1), INFER, chunk(audio, "never-started", false, false).json());
    assertThat(unknown.status()).as(unknown.text()).isEqualTo(400);
    assertThat(unknown.json().getString("error")).contains("no open sequence 'never-started'", "sequence_start");

    Http.Response notBool = http.postJson(port(0), INFER, chunk(audio, 5L, false, false)
        .parameter("sequence_start", "yes").json());
    assertThat(notBool.status()).as(notBool.text()).isEqualTo(400);
    assertThat(notBool.json().getString("error")).contains("parameters.sequence_start");

    Http.Response zero = http.postJson(port(1), INFER, chunk(audio, 0L, true, false).json());
    assertThat(zero.status()).as(zero.text()).isEqualTo(400);
    assertThat(zero.json().getString("error")).contains("parameters.sequence_id");

    OipGrpc.Result<ModelInferResponse> g = grpc.call(grpcPort(0), GRPCInferenceServiceGrpcClient.ModelInfer,
        chunk(audio, null, false, false).grpcRaw("vad"), Map.of());
    assertThat(g.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(g.message()).contains("parameters.sequence_id");
  }

  @Test
  void theExampleClientStreamsAWavFileAsOneSequence(@TempDir Path dir) throws Exception {
    Path say = dir.resolve("say.wav");
    Path wav = dir.resolve("speech.wav");
    VadAudio.run(List.of("espeak-ng", "-v", "en", "-s", "150", "-w", say.toString(), VadAudio.SENTENCE));
    VadAudio.run(List.of("sox", say.toString(), "-r", "16000", "-c", "1", "-b", "16", wav.toString(), "pad", "0.5", "0.5"));
    Path script = ServingCluster.repositoryRoot().resolve("deploy/examples/vad/stream.py");
    Process p = new ProcessBuilder("/usr/bin/python3", script.toString(), wav.toString(), "--url",
        "http://" + ServingCluster.HOST + ":" + port(1), "--id", "example-client").start();
    String out = new String(p.getInputStream().readAllBytes());
    String err = new String(p.getErrorStream().readAllBytes());
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(err).isZero();

    // What it printed is what ONNX Runtime gives the same 16-bit samples, state fed back by hand.
    byte[] pcm = Files.readAllBytes(wav);
    int data = new String(pcm, java.nio.charset.StandardCharsets.ISO_8859_1).indexOf("data") + 8; // the samples' chunk
    int bytes = ByteBuffer.wrap(pcm, data - 4, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    short[] samples = new short[bytes / 2];
    ByteBuffer.wrap(pcm, data, bytes).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(samples);
    float[][] chunks = new float[samples.length / CHUNK][CHUNK];
    for (int c = 0; c < chunks.length; c++) {
      for (int i = 0; i < CHUNK; i++) {
        chunks[c][i] = samples[c * CHUNK + i] / 32768f;
      }
    }
    float[] want = directly(chunks);
    List<String> lines = out.lines().toList();
    assertThat(lines).hasSize(chunks.length);
    for (int c = 0; c < chunks.length; c++) {
      double printed = Double.parseDouble(lines.get(c).trim().split("\\s+")[2]);
      assertThat(printed).as("chunk %d: %s", c, lines.get(c)).isCloseTo(want[c], within(0.00006));
    }
    assertThat(err).contains("speech ");
  }

  @Test
  @org.junit.jupiter.api.Order(Integer.MAX_VALUE - 1) // it restarts node-1's workers
  void aSequenceWhoseWorkerWasKilledFailsNamingItUntilItStartsAgain() {
    float[] audio = chunks(0)[0];
    String id = null;
    for (int i = 0; id == null; i++) {
      Http.Response r = http.postJson(port(1), INFER, chunk(audio, "worker-" + i, true, false).json());
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      if ("node-1".equals(r.json().getJsonObject("parameters", new JsonObject()).getString("kiln_node"))) {
        id = "worker-" + i;
      } else {
        assertThat(http.postJson(port(1), INFER, chunk(audio, "worker-" + i, false, true).json()).status())
            .isEqualTo(200);
      }
    }
    io.kiln.runtime.KilnRuntime node1 = cluster.node("node-1").runtime();
    for (int w = 0; w < 2; w++) { // whichever of node-1's two workers holds it
      io.kiln.runtime.ActorHandle<io.kiln.pools.ModelWorker> worker = ServingCluster.join(node1.getActor(
          io.kiln.pools.PoolManager.NAMESPACE, io.kiln.pools.PoolNames.worker("vad", "1", "node-1", w),
          io.kiln.pools.ModelWorker.class));
      ServingCluster.join(node1.kill(worker, true)); // as a crash would: the runtime restarts it, reloading the model
    }
    cluster.awaitReady("vad", 2);
    String lost = id;
    await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(200)).until(() ->
        cluster.stats("vad", "1", "node-1").idleWorkers() == 2);

    Http.Response next = http.postJson(port(0), INFER, chunk(audio, lost, false, false).json());
    assertThat(next.status()).as(next.text()).isEqualTo(503);
    assertThat(next.json().getString("error")).contains("sequence '" + lost + "' was lost", "sequence_start");
    OipGrpc.Result<ModelInferResponse> viaGrpc = grpc.call(grpcPort(1), GRPCInferenceServiceGrpcClient.ModelInfer,
        chunk(audio, lost, false, false).grpcRaw("vad"), Map.of());
    assertThat(viaGrpc.status()).isEqualTo(GrpcStatus.UNAVAILABLE);
    assertThat(viaGrpc.message()).contains("sequence '" + lost + "' was lost");
    assertThat(metrics().sum("kiln_pool_sequences_lost_total")).isGreaterThanOrEqualTo(1);
    Http.Response again = http.postJson(port(0), INFER, chunk(audio, lost, true, true).json());
    assertThat(again.status()).as(again.text()).isEqualTo(200);
  }

  @Test
  @org.junit.jupiter.api.Order(Integer.MAX_VALUE) // last: it crashes node-2
  void aSequenceWhoseNodeDiedFailsNamingItAndANewOneStartsOnTheNodeLeft() {
    float[] audio = chunks(0)[0];
    // A sequence the cluster places on node-2 (by its id's rendezvous hash over the nodes serving the model).
    String id = null;
    for (int i = 0; id == null; i++) {
      Http.Response r = http.postJson(port(0), INFER, chunk(audio, "doomed-" + i, true, false).json());
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      if ("node-2".equals(r.json().getJsonObject("parameters", new JsonObject()).getString("kiln_node"))) {
        id = "doomed-" + i;
      } else {
        assertThat(http.postJson(port(0), INFER, chunk(audio, "doomed-" + i, false, true).json()).status())
            .isEqualTo(200);
      }
    }
    assertThat(http.postJson(port(0), INFER, chunk(audio, id, false, false).json()).status()).isEqualTo(200);

    cluster.crash("node-2");

    String lost = id;
    List<String> answers = new ArrayList<>();
    await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(200)).until(() -> {
      Http.Response r = http.postJson(cluster.node("node-1").httpPort(), INFER, chunk(audio, lost, false, false)
          .json());
      answers.add(r.status() + " " + r.text());
      assertThat(r.status()).as("never served from a fresh state elsewhere: %s", answers).isNotEqualTo(200);
      return r.status() == 503 && r.text().contains("sequence '" + lost + "' was lost");
    });
    assertThat(answers.get(answers.size() - 1)).contains("node-2");

    Http.Response again = http.postJson(cluster.node("node-1").httpPort(), INFER, chunk(audio, lost, true, true)
        .json());
    assertThat(again.status()).as("started again, it runs on the node left: %s", again.text()).isEqualTo(200);
  }

  private PromText metrics() {
    StringBuilder all = new StringBuilder();
    for (String node : cluster.nodeIds()) {
      all.append(http.get(cluster.node(node).httpPort(), "/metrics").text());
    }
    return PromText.parse(all.toString());
  }
}
