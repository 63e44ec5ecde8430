package io.kiln.loadtest.impl;

/** Times as native load generators print them ({@code 412us}, {@code 1.64ms}, {@code 4.00s}), in milliseconds. */
final class ToolTimes {

  private ToolTimes() {
  }

  /** {@code value} in {@code unit} (us, ms, s, m, h) as milliseconds. */
  static double millis(double value, String unit) {
    return switch (unit) {
      case "us" -> value / 1000;
      case "ms" -> value;
      case "s" -> value * 1000;
      case "m" -> value * 60_000;
      case "h" -> value * 3_600_000;
      default -> throw new IllegalArgumentException("unknown time unit " + unit);
    };
  }
}
