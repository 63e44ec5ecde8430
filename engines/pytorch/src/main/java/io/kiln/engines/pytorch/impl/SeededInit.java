package io.kiln.engines.pytorch.impl;

import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.nio.FloatBuffer;
import java.util.SplittableRandom;

/**
 * Overwrites an initialized block's weights with values drawn from a seeded Java generator (He-uniform:
 * U(-b, b), b = sqrt(6 / fan-in)), so a built model is the same on every machine and engine version,
 * without touching the engine's global random state. Biases and batch-norm statistics keep DJL's
 * deterministic defaults (zeros, ones).
 */
public final class SeededInit {

  private SeededInit() {
  }

  /** @param block an initialized FP32 block */
  public static void apply(Block block, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    for (Pair<String, Parameter> p : block.getParameters()) {
      Parameter param = p.getValue();
      NDArray array = param.getArray();
      long[] shape = array.getShape().getShape();
      if (param.getType() != Parameter.Type.WEIGHT || shape.length < 2) {
        continue;
      }
      long fanIn = 1;
      for (int d = 1; d < shape.length; d++) {
        fanIn *= shape[d];
      }
      double bound = Math.sqrt(6.0 / fanIn);
      float[] values = new float[Math.toIntExact(array.size())];
      for (int i = 0; i < values.length; i++) {
        values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
      }
      array.set(FloatBuffer.wrap(values));
    }
  }
}
