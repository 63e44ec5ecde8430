package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OrtException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the sequence tests of Silero VAD share: real speech with known words (espeak-ng's voice, resampled by sox to
 * 16 kHz; both Debian packages ./run-tests installs), cut into 512-sample chunks, and ONNX Runtime's own loop over
 * them feeding {@code stateN} back by hand, the reference every served probability must equal.
 */
public final class VadAudio {

  public static final Path MODEL = ServingCluster.repositoryRoot().resolve("models/vad/silero/model.onnx");
  /** The example deployment of the model, {@code deploy/examples/vad/vad.yaml}. */
  public static final Path EXAMPLE = ServingCluster.repositoryRoot().resolve("deploy/examples/vad/vad.yaml");
  public static final int CHUNK = 512;
  public static final String SENTENCE = "the quick brown fox jumps over the lazy dog";

  private VadAudio() {
  }

  /** Skips the test locally, fails it under {@code CI=true}, when models/vad/fetch.sh has not run. */
  public static void requireModel() {
    if (!Files.isRegularFile(MODEL)) {
      String why = "Silero VAD is missing: run models/vad/fetch.sh (./run-tests does)";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(why);
      }
      org.junit.jupiter.api.Assumptions.abort(why);
    }
  }

  /** {@link #SENTENCE} spoken, with half a second of silence before and after, as 16 kHz float samples. */
  public static float[] speech(Path dir) throws Exception {
    Path wav = dir.resolve("speech.wav");
    Path raw = dir.resolve("speech.f32");
    run(List.of("espeak-ng", "-v", "en", "-s", "150", "-w", wav.toString(), SENTENCE));
    run(List.of("sox", wav.toString(), "-r", "16000", "-c", "1", "-e", "floating-point", "-b", "32", "-t", "raw",
        raw.toString(), "pad", "0.5", "0.5"));
    byte[] bytes = Files.readAllBytes(raw);
    float[] out = new float[bytes.length / 4];
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
    return out;
  }

  static void run(List<String> command) throws Exception {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s finished", command).isTrue();
    assertThat(p.exitValue()).as("%s: %s", command, output).isZero();
  }

  /** {@code samples} cut into whole 512-sample chunks, starting {@code offset} samples in. */
  public static float[][] chunks(float[] samples, int offset) {
    int n = (samples.length - offset) / CHUNK;
    float[][] out = new float[n][];
    for (int c = 0; c < n; c++) {
      out[c] = Arrays.copyOfRange(samples, offset + c * CHUNK, offset + (c + 1) * CHUNK);
    }
    return out;
  }

  /** ONNX Runtime's own loop over {@code chunks} on a session of its own: each chunk with the previous stateN. */
  public static float[] directly(float[][] chunks) throws OrtException {
    return io.kiln.pools.testsupport.SileroVadReference.probabilities(chunks);
  }
}
