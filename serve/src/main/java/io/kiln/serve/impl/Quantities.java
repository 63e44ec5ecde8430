package io.kiln.serve.impl;

import io.kiln.runtime.Resources;
import java.util.Map;
import java.util.TreeMap;

/**
 * Arithmetic on resource quantities in {@link Resources}' fixed-point units, for sums that
 * {@link Resources} itself refuses to hold (three workers of {@code GPU: 0.5} need 1.5 GPUs in total).
 * Maps are sorted by key; zero quantities are dropped. Stateless.
 */
public final class Quantities {

  private Quantities() {
  }

  public static TreeMap<String, Long> of(Resources r) {
    return new TreeMap<>(r.units());
  }

  public static TreeMap<String, Long> times(Resources r, int n) {
    TreeMap<String, Long> out = new TreeMap<>();
    r.units().forEach((k, v) -> {
      if (n > 0) {
        out.put(k, v * n);
      }
    });
    return out;
  }

  public static void addTo(Map<String, Long> into, Map<String, Long> add) {
    add.forEach((k, v) -> into.merge(k, v, Long::sum));
  }

  /** {@code from - take}, each quantity floored at zero. */
  public static TreeMap<String, Long> minusClamped(Map<String, Long> from, Map<String, Long> take) {
    TreeMap<String, Long> out = new TreeMap<>(from);
    take.forEach((k, v) -> {
      long left = out.getOrDefault(k, 0L) - v;
      if (left > 0) {
        out.put(k, left);
      } else {
        out.remove(k);
      }
    });
    return out;
  }

  /** The quantities of {@code need} above those of {@code capacity}, or an empty map if all fit. */
  public static TreeMap<String, Long> excess(Map<String, Long> need, Map<String, Long> capacity) {
    TreeMap<String, Long> out = new TreeMap<>();
    need.forEach((k, v) -> {
      if (v > capacity.getOrDefault(k, 0L)) {
        out.put(k, v);
      }
    });
    return out;
  }

  /**
   * How many workers each asking {@code perWorker} fit in {@code capacity}; {@link Integer#MAX_VALUE} if it
   * asks for nothing. A fractional GPU share must fit on one device ("fractions pack one device"), so
   * shares that do not divide a GPU leave a remainder on every device.
   */
  public static int fit(Resources perWorker, Map<String, Long> capacity) {
    long best = Integer.MAX_VALUE;
    for (Map.Entry<String, Long> e : perWorker.units().entrySet()) {
      long ask = e.getValue();
      long cap = capacity.getOrDefault(e.getKey(), 0L);
      long n;
      if (e.getKey().equals(Resources.GPU) && ask < Resources.SCALE) {
        n = (cap / Resources.SCALE) * (Resources.SCALE / ask) + (cap % Resources.SCALE) / ask;
      } else {
        n = cap / ask;
      }
      best = Math.min(best, n);
    }
    return (int) best;
  }

  /** Quantities as doubles, for display and JSON. */
  public static Map<String, Double> asDoubles(Map<String, Long> units) {
    TreeMap<String, Double> out = new TreeMap<>();
    units.forEach((k, v) -> out.put(k, v / (double) Resources.SCALE));
    return out;
  }

  /** {@code {CPU: 2, GPU: 0.5}}, in the style of {@link Resources#toString()}. */
  public static String format(Map<String, Double> quantities) {
    StringBuilder sb = new StringBuilder("{");
    quantities.forEach((k, v) -> {
      if (sb.length() > 1) {
        sb.append(", ");
      }
      sb.append(k).append(": ");
      if (v == Math.rint(v) && Math.abs(v) < 1e15) {
        sb.append((long) v.doubleValue());
      } else {
        sb.append(v);
      }
    });
    return sb.append('}').toString();
  }
}
