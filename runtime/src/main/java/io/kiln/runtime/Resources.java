package io.kiln.runtime;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * An immutable amount of resources: {@code CPU}, {@code GPU}, {@code memory} (bytes) and any custom key
 * such as {@code step_a_slot}. Quantities are kept in fixed point at a resolution of 1e-4 so that adding
 * and subtracting fractions never drifts (ten actors of {@code GPU: 0.1} exactly fill one GPU).
 *
 * <p>Rules, checked on construction: no negative quantity, no finer resolution than 1e-4, and a GPU
 * quantity above 1 must be whole (an actor cannot hold one and a half devices). Zero quantities are
 * dropped, so {@code Resources.cpu(0)} equals {@link #NONE}.
 *
 * <pre>{@code Resources.gpu(1).withCpu(0.5).with("step_a_slot", 1)}</pre>
 *
 * <p>(Java forbids a static {@code cpu(double)} beside an instance one, hence {@code with*} for chaining.)
 *
 * <p>With Jackson it reads and writes as the map of {@link #asMap()}, e.g. {@code {"CPU": 1.0, "GPU": 0.5}}.
 */
public final class Resources {

  public static final String CPU = "CPU";
  public static final String GPU = "GPU";
  public static final String MEMORY = "memory";

  /** Units per whole resource: quantities are multiples of 1/SCALE. */
  public static final long SCALE = 10_000;

  public static final Resources NONE = new Resources(new TreeMap<>());

  private final TreeMap<String, Long> units;

  private Resources(TreeMap<String, Long> units) {
    this.units = units;
  }

  public static Resources cpu(double amount) {
    return NONE.with(CPU, amount);
  }

  public static Resources gpu(double amount) {
    return NONE.with(GPU, amount);
  }

  public static Resources memory(long bytes) {
    return NONE.with(MEMORY, bytes);
  }

  public static Resources of(String key, double amount) {
    return NONE.with(key, amount);
  }

  /** Builds resources from a map such as {@code {"CPU": 1, "step_a_slot": 4}} (YAML, JSON, CLI). */
  @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
  public static Resources of(Map<String, ? extends Number> amounts) {
    Resources r = NONE;
    for (Map.Entry<String, ? extends Number> e : amounts.entrySet()) {
      r = r.with(e.getKey(), e.getValue().doubleValue());
    }
    return r;
  }

  /**
   * Builds resources from fixed-point units (as produced by {@link #units()}). No whole-GPU check: this
   * decodes quantities such as a node's available {@code GPU: 3.5}, which are not requests.
   */
  public static Resources ofUnits(Map<String, Long> units) {
    TreeMap<String, Long> copy = new TreeMap<>();
    units.forEach((k, v) -> {
      if (v < 0) {
        throw new IllegalArgumentException("negative quantity for " + k + ": " + v);
      }
      if (v > 0) {
        copy.put(checkKey(k), v);
      }
    });
    return new Resources(copy);
  }

  public Resources withCpu(double amount) {
    return with(CPU, amount);
  }

  public Resources withGpu(double amount) {
    return with(GPU, amount);
  }

  public Resources withMemory(long bytes) {
    return with(MEMORY, bytes);
  }

  /** A copy with {@code key} set to {@code amount} (replacing any previous amount). */
  public Resources with(String key, double amount) {
    checkKey(key);
    if (!(amount >= 0) || Double.isInfinite(amount)) {
      throw new IllegalArgumentException("resource " + key + " must be a finite non-negative number, got " + amount);
    }
    double scaled = amount * SCALE;
    long u = Math.round(scaled);
    if (Math.abs(scaled - u) > 1e-6 * Math.max(1, Math.abs(scaled))) {
      throw new IllegalArgumentException("resource " + key + " has more precision than 1e-4: " + amount);
    }
    TreeMap<String, Long> copy = new TreeMap<>(units);
    if (u == 0) {
      copy.remove(key);
    } else {
      copy.put(key, u);
    }
    checkGpu(copy);
    return new Resources(copy);
  }

  public double get(String key) {
    return units.getOrDefault(key, 0L) / (double) SCALE;
  }

  public long unitsOf(String key) {
    return units.getOrDefault(key, 0L);
  }

  /** Fixed-point units per key, for codecs and ledgers. */
  public Map<String, Long> units() {
    return Collections.unmodifiableMap(units);
  }

  /** Quantities as doubles, for display and JSON. */
  @JsonValue
  public Map<String, Double> asMap() {
    TreeMap<String, Double> m = new TreeMap<>();
    units.forEach((k, v) -> m.put(k, v / (double) SCALE));
    return m;
  }

  public boolean isZero() {
    return units.isEmpty();
  }

  /** Whether every quantity here is at most the same quantity in {@code capacity}. */
  public boolean fitsIn(Resources capacity) {
    for (Map.Entry<String, Long> e : units.entrySet()) {
      if (e.getValue() > capacity.unitsOf(e.getKey())) {
        return false;
      }
    }
    return true;
  }

  public Resources plus(Resources other) {
    TreeMap<String, Long> copy = new TreeMap<>(units);
    other.units.forEach((k, v) -> copy.merge(k, v, Long::sum));
    return new Resources(copy);
  }

  /**
   * This minus {@code other}.
   *
   * @throws IllegalArgumentException if any quantity would go negative
   */
  public Resources minus(Resources other) {
    TreeMap<String, Long> copy = new TreeMap<>(units);
    for (Map.Entry<String, Long> e : other.units.entrySet()) {
      long left = copy.getOrDefault(e.getKey(), 0L) - e.getValue();
      if (left < 0) {
        throw new IllegalArgumentException("cannot subtract " + other + " from " + this);
      }
      if (left == 0) {
        copy.remove(e.getKey());
      } else {
        copy.put(e.getKey(), left);
      }
    }
    return new Resources(copy);
  }

  /**
   * Checks that {@code key} can name a resource (1 to 128 characters), the rule {@link #with} applies.
   *
   * @return {@code key}
   * @throws IllegalArgumentException saying why not
   */
  public static String checkKey(String key) {
    Objects.requireNonNull(key, "resource key");
    if (key.isEmpty() || key.length() > 128) {
      throw new IllegalArgumentException("resource key must be 1..128 characters: '" + key + "'");
    }
    return key;
  }

  private static void checkGpu(TreeMap<String, Long> units) {
    long gpu = units.getOrDefault(GPU, 0L);
    if (gpu > SCALE && gpu % SCALE != 0) {
      throw new IllegalArgumentException("GPU above 1 must be a whole number, got " + gpu / (double) SCALE);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Resources r && r.units.equals(units);
  }

  @Override
  public int hashCode() {
    return units.hashCode();
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("{");
    units.forEach((k, v) -> {
      if (sb.length() > 1) {
        sb.append(", ");
      }
      sb.append(k).append(": ");
      if (v % SCALE == 0) {
        sb.append(v / SCALE);
      } else {
        sb.append(v / (double) SCALE);
      }
    });
    return sb.append('}').toString();
  }
}
