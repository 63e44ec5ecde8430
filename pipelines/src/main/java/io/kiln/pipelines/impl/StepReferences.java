package io.kiln.pipelines.impl;

import io.kiln.runtime.WireCodec;
import io.kiln.pipelines.StepResult;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code {{STEP.FIELD}}} references to earlier steps' results in a step's text (a generate step's prompt), beside
 * the run input's {@code ${input.NAME}} placeholders. Both are filled in one pass on the node the step runs on, so
 * neither a run's input nor a step's result can smuggle in a reference of its own. A field is, for an infer step,
 * one of its output tensors (the elements, one per line) or a field of its result; for any other step, a field of
 * its result. Stateless.
 */
public final class StepReferences {

  /** The fields of each built-in step kind's result (an infer step's also: its outputs' names). */
  public static final Set<String> FETCH_FIELDS = Set.of("key", "uri", "node", "path", "bytes", "sha256");
  public static final Set<String> WEBHOOK_FIELDS = Set.of("url", "status", "node");
  public static final Set<String> GENERATE_FIELDS = Set.of("text", "finish_reason", "prompt_tokens",
      "completion_tokens", "prompt", "deployment", "version", "node");
  public static final Set<String> INFER_FIELDS = Set.of("deployment", "graph", "version", "node", "input_key",
      "refetched");

  /** Longest text a filled template may grow to, in characters. */
  public static final int MAX_RENDERED_CHARS = 1 << 20;

  private static final Pattern REF = Pattern.compile("\\{\\{([^{}]*)}}");
  private static final Pattern BODY = Pattern.compile("\\s*([A-Za-z][A-Za-z0-9_-]{0,62})\\.([^\\s{}]{1,128})\\s*");
  private static final Pattern ANY = Pattern.compile("\\$\\{([^}]*)}|\\{\\{([^{}]*)}}");
  private static final Pattern INPUT = Pattern.compile("input\\.([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})");

  /** One reference as written: {@code {{step.field}}}. */
  public record Ref(String step, String field, String written) {
  }

  private StepReferences() {
  }

  /** Why {@code text} has a malformed reference or placeholder, or null if it has none. */
  public static String problem(String text) {
    Matcher m = REF.matcher(text);
    while (m.find()) {
      if (!BODY.matcher(m.group(1)).matches()) {
        return "reference '" + m.group() + "' is not of the form {{STEP.FIELD}} (a step before this one and a field"
            + " of its result, e.g. {{ocr.text}})";
      }
    }
    if (m.replaceAll("").contains("{{")) {
      return "unclosed reference in '" + abbreviated(text) + "': {{ opens a reference {{STEP.FIELD}}";
    }
    return Templates.problem(text);
  }

  /** The references of a text without {@link #problem}s, in order. */
  public static List<Ref> refs(String text) {
    List<Ref> out = new ArrayList<>();
    Matcher m = REF.matcher(text);
    while (m.find()) {
      Matcher b = BODY.matcher(m.group(1));
      if (b.matches()) {
        out.add(new Ref(b.group(1), b.group(2), m.group()));
      }
    }
    return out;
  }

  /**
   * {@code text} with every placeholder filled from {@code input} and every reference from {@code results}.
   *
   * @throws IllegalArgumentException naming the first input field, step or field missing, or when it grows past
   *     {@link #MAX_RENDERED_CHARS}
   */
  public static String render(String text, Map<String, String> input, Map<String, StepResult> results) {
    Matcher m = ANY.matcher(text);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String value;
      if (m.group(1) != null) {
        Matcher in = INPUT.matcher(m.group(1));
        if (!in.matches()) {
          throw new IllegalArgumentException("placeholder '" + m.group() + "' is not of the form ${input.NAME}");
        }
        value = input.get(in.group(1));
        if (value == null) {
          throw new IllegalArgumentException("the run's input has no field '" + in.group(1) + "'");
        }
      } else {
        Matcher b = BODY.matcher(m.group(2));
        if (!b.matches()) {
          throw new IllegalArgumentException("reference '" + m.group() + "' is not of the form {{STEP.FIELD}}");
        }
        StepResult r = results.get(b.group(1));
        if (r == null) {
          throw new IllegalArgumentException("reference '" + m.group() + "': step '" + b.group(1)
              + "' has no result in this run");
        }
        value = value(r, b.group(2));
      }
      m.appendReplacement(out, Matcher.quoteReplacement(value));
      if (out.length() > MAX_RENDERED_CHARS) {
        throw new IllegalArgumentException("the filled text is longer than " + MAX_RENDERED_CHARS + " characters");
      }
    }
    m.appendTail(out);
    if (out.length() > MAX_RENDERED_CHARS) {
      throw new IllegalArgumentException("the filled text is longer than " + MAX_RENDERED_CHARS + " characters");
    }
    return out.toString();
  }

  /**
   * A field of a step's result as text: an infer step's output tensor (its elements, one per line), else the
   * result's field (text as is, a list one element per line, a number or mapping as JSON).
   *
   * @throws IllegalArgumentException naming the step and the fields it has
   */
  @SuppressWarnings("unchecked")
  public static String value(StepResult r, String field) {
    if (r.output().get("outputs") instanceof List<?> tensors) {
      for (Object t : tensors) {
        if (t instanceof Map<?, ?> tensor && field.equals(tensor.get("name"))) {
          if (!(tensor.get("data") instanceof List<?> data)) {
            throw new IllegalArgumentException("output '" + field + "' of step '" + r.step() + "' carries no data"
                + " (too many elements to keep, or not a decodable type)");
          }
          return lines(data);
        }
      }
    }
    Object v = r.output().get(field);
    if (v == null) {
      Set<String> have = new TreeSet<>(r.output().keySet());
      if (r.output().get("outputs") instanceof List<?> tensors) {
        have.remove("outputs");
        tensors.forEach(t -> have.add(String.valueOf(((Map<String, Object>) t).get("name"))));
      }
      throw new IllegalArgumentException("step '" + r.step() + "' has no field '" + field + "'; it has: "
          + String.join(", ", have));
    }
    if (v instanceof String s) {
      return s;
    }
    if (v instanceof List<?> list) {
      return lines(list);
    }
    return json(v);
  }

  /** The fields a result of {@code kind} has, or null when any may be there (user steps). */
  public static Set<String> fields(io.kiln.pipelines.StepKind kind, Set<String> inferOutputs) {
    return switch (kind) {
      case FETCH -> FETCH_FIELDS;
      case WEBHOOK -> WEBHOOK_FIELDS;
      case GENERATE -> GENERATE_FIELDS;
      case INFER -> {
        if (inferOutputs == null) {
          yield null;
        }
        Set<String> all = new TreeSet<>(INFER_FIELDS);
        all.addAll(inferOutputs);
        yield all;
      }
      case CLASS -> null;
    };
  }

  private static String lines(List<?> items) {
    StringBuilder s = new StringBuilder();
    for (Object o : items) {
      if (s.length() > 0) {
        s.append('\n');
      }
      s.append(o instanceof String t ? t : json(o));
      if (s.length() > MAX_RENDERED_CHARS) {
        throw new IllegalArgumentException("a referenced value is longer than " + MAX_RENDERED_CHARS + " characters");
      }
    }
    return s.toString();
  }

  private static String json(Object v) {
    try {
      return WireCodec.json().writeValueAsString(v);
    } catch (IOException e) {
      throw new IllegalArgumentException("a referenced value is not JSON-like: " + e.getMessage());
    }
  }

  private static String abbreviated(String text) {
    return text.length() <= 60 ? text : text.substring(0, 57) + "...";
  }
}
