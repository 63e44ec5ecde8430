package io.kiln.serve.yaml;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;

/**
 * Millisecond quantities of the schema ({@code *_ms} fields) to and from {@link Duration}. Fractions are
 * allowed down to the microsecond (a 0.5 ms batching delay is meaningful for a 25 µs model), and decimal
 * arithmetic keeps the text round trip exact.
 */
public final class Durations {

  private static final BigDecimal NANOS_PER_MILLI = BigDecimal.valueOf(1_000_000);

  private Durations() {
  }

  /** {@code ms} milliseconds, rounded to the microsecond. */
  public static Duration ofMillis(BigDecimal ms) {
    BigDecimal micros = ms.movePointRight(3).setScale(0, RoundingMode.HALF_UP);
    return Duration.ofNanos(micros.longValueExact() * 1_000);
  }

  /** Milliseconds as an exact decimal without trailing zeros ({@code 2}, {@code 0.5}). */
  public static BigDecimal toMillis(Duration d) {
    BigDecimal ms = new BigDecimal(d.toNanos()).divide(NANOS_PER_MILLI);
    ms = ms.stripTrailingZeros();
    return ms.scale() < 0 ? ms.setScale(0) : ms;
  }

  public static String millisText(Duration d) {
    return toMillis(d).toPlainString();
  }
}
