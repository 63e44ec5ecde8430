package io.kiln.loadtest.impl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Minimal {@code --name value} / {@code --name=value} / {@code --flag} parsing. Every accessor marks the
 * option used, so {@link #rejectUnused()} can refuse typos instead of silently ignoring them.
 * Errors are {@link IllegalArgumentException}s with a message meant for the user.
 */
public final class CliArgs {
  private final Map<String, String> values;
  private final List<String> positional;
  private final Set<String> used = new HashSet<>();

  private CliArgs(Map<String, String> values, List<String> positional) {
    this.values = values;
    this.positional = positional;
  }

  /** @param flags option names that take no value */
  public static CliArgs parse(String[] argv, Set<String> flags) {
    Map<String, String> values = new LinkedHashMap<>();
    List<String> positional = new ArrayList<>();
    for (int i = 0; i < argv.length; i++) {
      String a = argv[i];
      if (!a.startsWith("--")) {
        positional.add(a);
        continue;
      }
      String name = a.substring(2);
      String value;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      } else if (flags.contains(name)) {
        value = "true";
      } else if (i + 1 < argv.length) {
        value = argv[++i];
      } else {
        throw new IllegalArgumentException("option --" + name + " needs a value");
      }
      if (values.put(name, value) != null) {
        throw new IllegalArgumentException("option --" + name + " given twice");
      }
    }
    return new CliArgs(values, positional);
  }

  public boolean has(String name) {
    used.add(name);
    return values.containsKey(name);
  }

  public boolean flag(String name) {
    return Boolean.parseBoolean(string(name, "false"));
  }

  public String string(String name, String def) {
    used.add(name);
    return values.getOrDefault(name, def);
  }

  public int integer(String name, int def) {
    return (int) longValue(name, def);
  }

  public long longValue(String name, long def) {
    String v = string(name, null);
    try {
      return v == null ? def : Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + ": not an integer: " + v, e);
    }
  }

  public double doubleValue(String name, double def) {
    String v = string(name, null);
    try {
      return v == null ? def : Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + ": not a number: " + v, e);
    }
  }

  /** {@code 500ms}, {@code 2s}, {@code 1.5s}, {@code 1m}; a bare number is seconds. */
  public Duration duration(String name, Duration def) {
    String v = string(name, null);
    return v == null ? def : parseDuration(name, v.trim());
  }

  static Duration parseDuration(String name, String v) {
    try {
      double amount;
      long nanosPerUnit;
      if (v.endsWith("ms")) {
        amount = Double.parseDouble(v.substring(0, v.length() - 2));
        nanosPerUnit = 1_000_000L;
      } else if (v.endsWith("s")) {
        amount = Double.parseDouble(v.substring(0, v.length() - 1));
        nanosPerUnit = 1_000_000_000L;
      } else if (v.endsWith("m")) {
        amount = Double.parseDouble(v.substring(0, v.length() - 1));
        nanosPerUnit = 60_000_000_000L;
      } else {
        amount = Double.parseDouble(v);
        nanosPerUnit = 1_000_000_000L;
      }
      if (amount < 0 || Double.isNaN(amount) || amount > 86_400L * 1e9 / nanosPerUnit) {
        throw new IllegalArgumentException("--" + name + ": out of range: " + v);
      }
      return Duration.ofNanos(Math.round(amount * nanosPerUnit));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + ": not a duration (e.g. 500ms, 2s, 1m): " + v, e);
    }
  }

  public List<String> positional() {
    return List.copyOf(positional);
  }

  /** @throws IllegalArgumentException naming every option no accessor asked for */
  public void rejectUnused() {
    List<String> unknown = new ArrayList<>();
    for (String name : values.keySet()) {
      if (!used.contains(name)) {
        unknown.add("--" + name);
      }
    }
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("unknown option(s): " + String.join(" ", unknown));
    }
  }
}
