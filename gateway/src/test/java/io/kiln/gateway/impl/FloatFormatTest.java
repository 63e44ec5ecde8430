package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.io.schubfach.FloatToDecimal;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link FloatFormat} against Jackson's {@code FloatToDecimal} (what the gateway printed before): its 10^-k
 * table entry for entry, and the text value for value — every power of two, every subnormal multiple of 97,
 * dense runs around the decimal boundaries and a million random bit patterns. {@link #main} runs all 2^32
 * bit patterns (minutes): {@code java -cp ... io.kiln.gateway.impl.FloatFormatTest}.
 */
class FloatFormatTest {

  static String format(float f) {
    ByteSink out = new ByteSink(16);
    FloatFormat.put(out, f);
    return new String(out.array(), 0, out.length(), StandardCharsets.ISO_8859_1);
  }

  static void check(float f) {
    if (Float.isFinite(f)) {
      String expected = FloatToDecimal.toString(f);
      String actual = format(f);
      if (!expected.equals(actual)) {
        throw new AssertionError("bits " + Integer.toHexString(Float.floatToRawIntBits(f)) + ": " + actual
            + " instead of " + expected);
      }
    }
  }

  @Test
  void theTableIsJacksons() throws Exception {
    Class<?> math = Class.forName("com.fasterxml.jackson.core.io.schubfach.MathUtils");
    Method g1 = math.getDeclaredMethod("g1", int.class);
    g1.setAccessible(true);
    for (int k = FloatFormat.K_MIN; k <= FloatFormat.K_MAX; k++) {
      assertThat(FloatFormat.g1Exact(k)).as("g1(%d)", k).isEqualTo((long) g1.invoke(null, k));
    }
  }

  @Test
  void printsWhatJacksonPrints() {
    for (float f : new float[] {0f, -0f, 1f, -1f, 0.1f, 0.3f, 1f / 3, 1e-3f, 9.999999e-4f, 1e7f, 9999999f, 1e-4f,
        Float.MIN_VALUE, Float.MIN_NORMAL, Float.MAX_VALUE, 2e-45f, 16777216f, 3.4028235e38f, 1.17549435E-38f}) {
      check(f);
      check(-f);
    }
    for (int e = -149; e < 128; e++) {
      check((float) Math.scalb(1.0, e));
      check(Math.nextUp((float) Math.scalb(1.0, e)));
      check(Math.nextDown((float) Math.scalb(1.0, e)));
    }
    for (int t = 0; t < (1 << 23); t += 97) {
      check(Float.intBitsToFloat(t));
    }
    for (float boundary : new float[] {1e-3f, 1e7f, 1f, 10f, 1e-38f, 1e38f}) {
      float f = boundary;
      for (int i = 0; i < 2000; i++) {
        check(f);
        f = Math.nextDown(f);
      }
    }
    SplittableRandom r = new SplittableRandom(20261201L);
    for (int i = 0; i < 1_000_000; i++) {
      check(Float.intBitsToFloat(r.nextInt()));
    }
  }

  /** Every float: {@code java -cp <test classpath> io.kiln.gateway.impl.FloatFormatTest [threads]}. */
  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : Runtime.getRuntime().availableProcessors();
    Thread[] workers = new Thread[threads];
    long[] done = new long[threads];
    for (int w = 0; w < threads; w++) {
      int id = w;
      workers[w] = new Thread(() -> {
        for (long bits = id; bits <= 0xffffffffL; bits += threads) {
          check(Float.intBitsToFloat((int) bits));
          done[id]++;
        }
      });
      workers[w].start();
    }
    for (Thread t : workers) {
      t.join();
    }
    long total = 0;
    for (long d : done) {
      total += d;
    }
    System.out.println("all " + total + " bit patterns print as Jackson prints them");
  }
}
