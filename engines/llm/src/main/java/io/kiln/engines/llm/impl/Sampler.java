package io.kiln.engines.llm.impl;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks a sequence's next token from its logits: greedy (argmax, ties to the lowest id) at temperature 0, else
 * temperature, top-k and top-p sampling with the sequence's own random generator, so a seeded sequence draws the
 * same tokens whatever else runs in its batch. Not thread-safe; the scratch arrays are shared by all of a runner's
 * samplers (one worker thread).
 */
final class Sampler {

  /** Candidates tried before sorting the whole vocabulary for top-p. */
  private static final int NUCLEUS_FIRST_TRY = 256;

  private final double temperature;
  private final double topP;
  private final int topK;
  private final SplittableRandom random;

  Sampler(double temperature, double topP, int topK, long seed) {
    this.temperature = temperature;
    this.topP = topP;
    this.topK = topK;
    this.random = new SplittableRandom(seed);
  }

  /** Working memory for one vocabulary size. */
  static final class Scratch {
    final float[] logits;
    final long[] keys;
    final double[] probs;

    Scratch(int vocab) {
      logits = new float[vocab];
      keys = new long[vocab];
      probs = new double[vocab];
    }
  }

  /** The next token, given the logits in {@code s.logits}. */
  int sample(Scratch s) {
    float[] l = s.logits;
    int v = l.length;
    if (temperature == 0 || topK == 1) {
      return argmax(l);
    }
    float max = l[argmax(l)];
    double invT = 1.0 / temperature;
    if (topK == 0 && topP >= 1) { // plain temperature: walk the vocabulary in id order
      double sum = 0;
      for (int i = 0; i < v; i++) {
        s.probs[i] = Math.exp((l[i] - max) * invT);
        sum += s.probs[i];
      }
      return walk(s.probs, null, v, sum);
    }
    int n = topK > 0 ? Math.min(topK, v) : Math.min(NUCLEUS_FIRST_TRY, v);
    top(l, n, s.keys);
    double z = 0; // the full softmax's normaliser, so top-p measures mass over the whole vocabulary
    if (topK == 0) {
      for (int i = 0; i < v; i++) {
        z += Math.exp((l[i] - max) * invT);
      }
    }
    double kept = fill(l, s.keys, n, max, invT, s.probs);
    if (topK > 0) {
      z = kept;
    } else if (kept < topP * z && n < v) { // the first candidates hold too little mass: sort them all
      n = v;
      for (int i = 0; i < v; i++) {
        s.keys[i] = key(l[i], i);
      }
      Arrays.sort(s.keys, 0, v);
      fill(l, s.keys, n, max, invT, s.probs);
    }
    int cut = n;
    if (topP < 1) {
      double cum = 0;
      for (int i = 0; i < n; i++) {
        cum += s.probs[i];
        if (cum >= topP * z) {
          cut = i + 1;
          break;
        }
      }
    }
    double sum = 0;
    for (int i = 0; i < cut; i++) {
      sum += s.probs[i];
    }
    return walk(s.probs, s.keys, cut, sum);
  }

  private int walk(double[] probs, long[] keys, int n, double sum) {
    double u = random.nextDouble() * sum;
    double cum = 0;
    for (int i = 0; i < n; i++) {
      cum += probs[i];
      if (u < cum) {
        return keys == null ? i : (int) keys[i];
      }
    }
    return keys == null ? n - 1 : (int) keys[n - 1]; // rounding left u at the very top
  }

  private static double fill(float[] l, long[] keys, int n, float max, double invT, double[] probs) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
      probs[i] = Math.exp((l[(int) keys[i]] - max) * invT);
      sum += probs[i];
    }
    return sum;
  }

  static int argmax(float[] l) {
    int best = 0;
    for (int i = 1; i < l.length; i++) {
      if (l[i] > l[best]) {
        best = i;
      }
    }
    return best;
  }

  /** The {@code n} best tokens into {@code keys[0, n)}, best first (higher logit, then lower id). */
  private static void top(float[] l, int n, long[] keys) {
    // A max-heap (on key: the worst kept candidate at the root) of the n best seen so far.
    int size = 0;
    for (int i = 0; i < l.length; i++) {
      long k = key(l[i], i);
      if (size < n) {
        keys[size] = k;
        up(keys, size++);
      } else if (k < keys[0]) {
        keys[0] = k;
        down(keys, size);
      }
    }
    Arrays.sort(keys, 0, size);
  }

  /** Sorts ascending by descending logit, then ascending id; the id is the low 32 bits. */
  static long key(float logit, int id) {
    int bits = Float.floatToIntBits(logit);
    int ordered = bits ^ ((bits >> 31) & 0x7fffffff);
    return ((long) ~ordered << 32) | id;
  }

  private static void up(long[] h, int i) {
    while (i > 0) {
      int p = (i - 1) / 2;
      if (h[p] >= h[i]) {
        return;
      }
      long t = h[p];
      h[p] = h[i];
      h[i] = t;
      i = p;
    }
  }

  private static void down(long[] h, int size) {
    int i = 0;
    while (true) {
      int c = 2 * i + 1;
      if (c >= size) {
        return;
      }
      if (c + 1 < size && h[c + 1] > h[c]) {
        c++;
      }
      if (h[i] >= h[c]) {
        return;
      }
      long t = h[c];
      h[c] = h[i];
      h[i] = t;
      i = c;
    }
  }
}
