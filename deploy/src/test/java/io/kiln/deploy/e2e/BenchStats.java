package io.kiln.deploy.e2e;

import java.util.Arrays;
import java.util.Locale;

/** Latency samples of a benchmark level (nanoseconds), read as percentiles in milliseconds. */
final class BenchStats {

  private long[] samples = new long[1024];
  private int size;

  synchronized void add(long nanos) {
    if (size == samples.length) {
      samples = Arrays.copyOf(samples, size * 2);
    }
    samples[size++] = nanos;
  }

  synchronized int count() {
    return size;
  }

  /** The {@code q} quantile (0..1) in milliseconds; NaN without samples. */
  synchronized double millis(double q) {
    if (size == 0) {
      return Double.NaN;
    }
    long[] sorted = Arrays.copyOf(samples, size);
    Arrays.sort(sorted);
    return sorted[Math.min(size - 1, (int) Math.floor(q * size))] / 1e6;
  }

  /** A benchmark knob: system property {@code kiln.bench.<name>}, else {@code dflt}. */
  static String knob(String name, String dflt) {
    return System.getProperty("kiln.bench." + name, dflt);
  }

  static int[] ints(String csv) {
    return Arrays.stream(csv.split(",")).map(String::trim).filter(s -> !s.isEmpty()).mapToInt(Integer::parseInt)
        .toArray();
  }

  static String f(String format, Object... args) {
    return String.format(Locale.ROOT, format, args);
  }
}
