package io.kiln.pools.testsupport;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.util.Map;

/**
 * Silero VAD run the plain way, the reference every served probability of a sequence must equal: ONNX Runtime's own
 * loop over 512-sample chunks of 16 kHz audio, each chunk with the previous chunk's {@code stateN} (zeros first).
 * Shared by model-pools' {@code SequencePoolTest} and deploy's sequence end-to-end tests.
 */
public final class SileroVadReference {

  public static final int CHUNK = 512;

  private SileroVadReference() {
  }

  /** The model of {@link ProjectModels#sileroVad()}'s folder. */
  public static Path model() {
    return ProjectModels.sileroVad().build().uri().resolve("model.onnx");
  }

  /** Each chunk's speech probability, on a session of its own over {@link #model()}. */
  public static float[] probabilities(float[][] chunks) throws OrtException {
    OrtEnvironment env = OrtEnvironment.getEnvironment();
    try (OrtSession direct = env.createSession(model().toString(), new OrtSession.SessionOptions())) {
      return probabilities(env, direct, chunks);
    }
  }

  /** Each chunk's speech probability, on {@code session} (Silero VAD's). */
  public static float[] probabilities(OrtEnvironment env, OrtSession session, float[][] chunks) throws OrtException {
    float[] state = new float[256];
    float[] probs = new float[chunks.length];
    for (int c = 0; c < chunks.length; c++) {
      try (OnnxTensor in = OnnxTensor.createTensor(env, FloatBuffer.wrap(chunks[c]), new long[] {1, CHUNK});
           OnnxTensor st = OnnxTensor.createTensor(env, FloatBuffer.wrap(state), new long[] {2, 1, 128});
           OnnxTensor sr = OnnxTensor.createTensor(env, LongBuffer.wrap(new long[] {16_000}), new long[0]);
           OrtSession.Result res = session.run(Map.of("input", in, "state", st, "sr", sr))) {
        float[] p = new float[1];
        ((OnnxTensor) res.get("output").orElseThrow()).getFloatBuffer().get(p);
        probs[c] = p[0];
        state = new float[256];
        ((OnnxTensor) res.get("stateN").orElseThrow()).getFloatBuffer().get(state);
      }
    }
    return probs;
  }
}
