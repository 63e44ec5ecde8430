package io.kiln.engines.llm.impl;

import io.kiln.pools.spi.SpecProblem;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Reads an engine's {@code options:} (text values as written in YAML) and reports what is wrong with them as
 * {@link SpecProblem}s of field {@code options.<name>}, so serve's YAML reader points at the option itself.
 */
final class Options {

  private final Map<String, String> values;
  private final List<SpecProblem> problems;

  Options(Map<String, String> values, Set<String> known, List<SpecProblem> problems) {
    this.values = values;
    this.problems = problems;
    for (String name : values.keySet()) {
      if (!known.contains(name)) {
        problems.add(new SpecProblem("options." + name, "unknown option, expected one of "
            + String.join(", ", known.stream().sorted().toList())));
      }
    }
  }

  /** The integer option {@code name} in {@code min..max}, or {@code dflt} when absent or wrong (reported). */
  int integer(String name, int dflt, int min, int max) {
    String v = values.get(name);
    if (v == null) {
      return dflt;
    }
    try {
      int n = Integer.parseInt(v.trim());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below, with the range
    }
    problems.add(new SpecProblem("options." + name, "must be an integer in " + min + ".." + max + ", got '" + v + "'"));
    return dflt;
  }

  boolean bool(String name, boolean dflt) {
    String v = values.get(name);
    if (v == null) {
      return dflt;
    }
    String t = v.trim().toLowerCase(Locale.ROOT);
    if (t.equals("true") || t.equals("false")) {
      return Boolean.parseBoolean(t);
    }
    problems.add(new SpecProblem("options." + name, "must be true or false, got '" + v + "'"));
    return dflt;
  }

  String choice(String name, String dflt, List<String> allowed) {
    String v = values.get(name);
    if (v == null) {
      return dflt;
    }
    String t = v.trim().toLowerCase(Locale.ROOT);
    if (allowed.contains(t)) {
      return t;
    }
    problems.add(new SpecProblem("options." + name, "must be one of " + String.join(", ", allowed) + ", got '" + v
        + "'"));
    return dflt;
  }

  void problem(String name, String message) {
    problems.add(new SpecProblem("options." + name, message));
  }
}
