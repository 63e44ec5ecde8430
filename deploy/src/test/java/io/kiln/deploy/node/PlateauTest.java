package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** When the warm-up's throughput counts as levelled off, on synthetic rate curves sampled every 250 ms. */
class PlateauTest {

  private static final long TICK = 250_000_000L;

  /** Feeds {@code ratePerSecond(t)} (t in seconds) for {@code seconds}; the second at which it levelled off, or -1. */
  private static double levelsOffAt(java.util.function.DoubleUnaryOperator ratePerSecond, double seconds) {
    Plateau p = new Plateau();
    double count = 0;
    for (long t = 0; t <= seconds * 1e9; t += TICK) {
      count += ratePerSecond.applyAsDouble(t / 1e9) * TICK / 1e9;
      p.sample(t, (long) count);
      if (p.reached()) {
        return t / 1e9;
      }
    }
    return -1;
  }

  @Test
  void aFlatRateLevelsOffAsSoonAsTwoWindowsCanBeCompared() {
    // 3 s of traffic for the two windows and the lag, then three flat samples in a row.
    assertThat(levelsOffAt(t -> 5_000, 20)).isEqualTo(3.5);
  }

  @Test
  void aClimbingRateDoesNotLevelOffUntilItFlattens() {
    // The cold-JIT curve measured on one loaded core: ~150 req/s climbing to ~7,000 over ten seconds.
    double at = levelsOffAt(t -> t < 10 ? 150 + 685 * t : 7_000, 30);
    assertThat(at).isBetween(10.0, 13.5);
  }

  @Test
  void aRateThatKeepsGrowingNeverLevelsOff() {
    assertThat(levelsOffAt(t -> 100 * Math.pow(1.2, t), 20)).isEqualTo(-1);
  }

  @Test
  void oneDipDoesNotEndTheWarmup() {
    // A neighbour takes the core for half a second while the rate still climbs.
    double at = levelsOffAt(t -> (t > 4 && t < 4.5 ? 0.2 : 1) * (t < 8 ? 500 + 800 * t : 6_900), 30);
    assertThat(at).isGreaterThanOrEqualTo(8.0);
  }
}
