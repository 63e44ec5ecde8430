package io.kiln.pipelines;

import java.util.Map;
import java.util.Objects;

/**
 * What starts a run.
 *
 * @param input values for the pipeline's {@code ${input.NAME}} placeholders (at most {@link #MAX_FIELDS}
 *     fields of at most {@link #MAX_VALUE_CHARS} characters)
 * @param webhook where to POST the final status instead of the pipeline's {@code webhook}; empty for the
 *     pipeline's
 */
public record RunRequest(Map<String, String> input, String webhook) {

  public static final int MAX_FIELDS = 64;
  public static final int MAX_VALUE_CHARS = 8192;

  public RunRequest {
    input = input == null ? Map.of() : Map.copyOf(input);
    webhook = webhook == null ? "" : webhook;
    if (input.size() > MAX_FIELDS) {
      throw new IllegalArgumentException("input has " + input.size() + " fields; at most " + MAX_FIELDS);
    }
    for (Map.Entry<String, String> e : input.entrySet()) {
      Objects.requireNonNull(e.getValue(), "input." + e.getKey());
      if (e.getKey().length() > 128 || e.getValue().length() > MAX_VALUE_CHARS) {
        throw new IllegalArgumentException("input." + abbreviate(e.getKey()) + " is too long (keys at most 128,"
            + " values at most " + MAX_VALUE_CHARS + " characters)");
      }
    }
    if (webhook.length() > MAX_VALUE_CHARS) {
      throw new IllegalArgumentException("webhook is longer than " + MAX_VALUE_CHARS + " characters");
    }
  }

  public static RunRequest of(Map<String, String> input) {
    return new RunRequest(input, "");
  }

  private static String abbreviate(String s) {
    return s.length() > 40 ? s.substring(0, 37) + "..." : s;
  }
}
