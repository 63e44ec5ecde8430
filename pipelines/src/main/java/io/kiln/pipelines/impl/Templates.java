package io.kiln.pipelines.impl;

import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ${input.NAME}} placeholders in step settings, filled from a run's input when it starts. Nothing
 * else is expanded (no environment, no expressions), so a run's input can only ever become text.
 */
public final class Templates {

  private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([^}]*)}");
  private static final Pattern INPUT = Pattern.compile("input\\.([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})");

  private Templates() {
  }

  /** Why {@code text} has a malformed placeholder, or null if it has none. */
  public static String problem(String text) {
    Matcher m = PLACEHOLDER.matcher(text);
    while (m.find()) {
      if (!INPUT.matcher(m.group(1)).matches()) {
        return "placeholder '" + m.group() + "' is not of the form ${input.NAME}";
      }
    }
    if (text.replaceAll(PLACEHOLDER.pattern(), "").contains("${")) {
      return "unclosed placeholder in '" + text + "'";
    }
    return null;
  }

  /** The input names {@code text} refers to. */
  public static Set<String> names(String text) {
    Set<String> out = new LinkedHashSet<>();
    Matcher m = PLACEHOLDER.matcher(text);
    while (m.find()) {
      Matcher in = INPUT.matcher(m.group(1));
      if (in.matches()) {
        out.add(in.group(1));
      }
    }
    return out;
  }

  /**
   * {@code text} with every placeholder replaced by its input value.
   *
   * @throws IllegalArgumentException naming the first input field missing
   */
  public static String fill(String text, Map<String, String> input) {
    Matcher m = PLACEHOLDER.matcher(text);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      Matcher in = INPUT.matcher(m.group(1));
      if (!in.matches()) {
        throw new IllegalArgumentException("placeholder '" + m.group() + "' is not of the form ${input.NAME}");
      }
      String value = input.get(in.group(1));
      if (value == null) {
        throw new IllegalArgumentException("the run's input has no field '" + in.group(1) + "'");
      }
      m.appendReplacement(out, Matcher.quoteReplacement(value));
    }
    m.appendTail(out);
    return out.toString();
  }
}
