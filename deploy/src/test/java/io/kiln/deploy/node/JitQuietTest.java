package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.function.LongUnaryOperator;
import org.junit.jupiter.api.Test;

/** When the JIT counts as having caught up, on synthetic compilation-time curves sampled every 250 ms. */
class JitQuietTest {

  private static final long TICK = 250_000_000L;

  /** Feeds the compile time {@code millisAt(t)} (t in ms) for {@code seconds}; the second it went quiet, or -1. */
  private static double quietAt(LongUnaryOperator millisAt, int seconds) {
    JitQuiet q = new JitQuiet();
    for (long t = 0; t <= seconds * 1_000_000_000L; t += TICK) {
      q.sample(t, millisAt.applyAsLong(t / 1_000_000));
      if (q.reached()) {
        return t / 1e9;
      }
    }
    return -1;
  }

  @Test
  void aJitThatNeverCompilesIsQuietOnceAWindowIsFull() {
    assertThat(quietAt(t -> 12_345, 10)).isEqualTo(2.5); // a 2 s window, then three quiet samples in a row
  }

  @Test
  void busyCompilationIsNotQuietUntilItStops() {
    // ~600 ms of compilation per second for 20 s (the measured cold start on one core), then a trickle.
    double at = quietAt(t -> t < 20_000 ? t * 6 / 10 : 12_000 + (t - 20_000) / 100, 40);
    assertThat(at).isBetween(20.0, 23.0);
  }

  @Test
  void oneLongCompileThatCompletesLateDoesNotLookQuiet() {
    // The total grows only when compilations complete: a 1.5 s compile shows as a pause, then a jump.
    double at = quietAt(t -> {
      long busy = Math.min(t, 20_000) * 6 / 10;
      return t >= 8_000 && t < 9_500 ? 8_000 * 6 / 10 : busy;
    }, 40);
    assertThat(at).isGreaterThanOrEqualTo(20.0);
  }

  @Test
  void compilationThatNeverStopsIsNeverQuiet() {
    assertThat(quietAt(t -> t / 5, 30)).isEqualTo(-1); // 20 % of the time, for ever
  }
}
