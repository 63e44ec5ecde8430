package io.kiln.serve.yaml;

import io.kiln.pools.SpecRules;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Typed reading of a composed YAML (or JSON) node tree, reporting every mismatch to {@link Problems} with
 * the node's position. Methods return {@code null} when the value was wrong (the problem is reported), so
 * callers can go on and find the next problem. Scalars are read from their text, never constructed into
 * objects, so no tag can make the reader instantiate anything. Not thread-safe.
 */
public final class Reading {

  /**
   * Values read per document at most. Aliases let a small document name the same subtree many times;
   * with the alias cap this bounds the work a hostile document can cause.
   */
  public static final long MAX_VALUES = 200_000;

  /** Plain decimals only: YAML 1.1's octal, hex and base-60 forms are more likely accidents than intent. */
  private static final Pattern DECIMAL = Pattern.compile("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]{1,4})?");

  private final Problems problems;
  private long visited;

  public Reading(Problems problems) {
    this.problems = problems;
  }

  public Problems problems() {
    return problems;
  }

  /** Counts one value read. */
  void visit(Node node) {
    if (++visited > MAX_VALUES) {
      throw problems.fatal(node.getStartMark(), "", "the document expands to more than " + MAX_VALUES
          + " values (through aliases?); refusing to read further");
    }
  }

  /** A reader over {@code node}'s fields, or an empty one (after reporting) if it is not a mapping. */
  public MappingReader mapping(Node node, String path) {
    visit(node);
    if (node instanceof MappingNode m) {
      return new MappingReader(this, m, path);
    }
    problems.at(node, path, "expected a mapping, got " + describe(node));
    return MappingReader.invalid(this, node, path);
  }

  /** The items of a list, or null (after reporting) if {@code node} is not a list. */
  public List<Node> list(Node node, String path) {
    visit(node);
    if (node instanceof SequenceNode s) {
      return s.getValue();
    }
    problems.at(node, path, "expected a list, got " + describe(node));
    return null;
  }

  /** A scalar's text: strings, and numbers written where text is expected (as in {@code version: 1}). */
  public String text(Node node, String path) {
    visit(node);
    if (node instanceof ScalarNode s && (isTag(s, Tag.STR) || isTag(s, Tag.INT) || isTag(s, Tag.FLOAT))) {
      return s.getValue();
    }
    problems.at(node, path, "expected a string, got " + describe(node));
    return null;
  }

  /** {@code true} or {@code false}; null if anything else (reported). */
  public Boolean bool(Node node, String path) {
    visit(node);
    if (node instanceof ScalarNode s && isTag(s, Tag.BOOL)) {
      return Boolean.valueOf(s.getValue().toLowerCase(java.util.Locale.ROOT).matches("true|yes|on|y"));
    }
    problems.at(node, path, "expected true or false, got " + describe(node));
    return null;
  }

  /** A decimal integer in [{@code min}, {@code max}]. */
  public Long integer(Node node, String path, long min, long max) {
    BigDecimal n = number(node, path, "an integer");
    if (n == null) {
      return null;
    }
    if (n.stripTrailingZeros().scale() > 0 || n.toPlainString().contains(".")) {
      problems.at(node, path, "expected an integer, got " + describe(node));
      return null;
    }
    return inRange(node, path, n, min, max) ? n.longValueExact() : null;
  }

  /** A finite number in [{@code min}, {@code max}]. */
  public BigDecimal decimal(Node node, String path, long min, long max) {
    BigDecimal n = number(node, path, "a number");
    return n != null && inRange(node, path, n, min, max) ? n : null;
  }

  /** Milliseconds as a {@link Duration}, at least {@code minMs} (0 or 1) and at most {@link SpecRules#MAX_DURATION}. */
  public Duration millis(Node node, String path, long minMs) {
    BigDecimal n = number(node, path, "a number of milliseconds");
    if (n == null) {
      return null;
    }
    if (n.signum() < 0) {
      problems.at(node, path, "must not be negative, got " + show(n));
      return null;
    }
    if (minMs > 0 && n.signum() == 0) {
      problems.at(node, path, "must be greater than 0, got " + show(n));
      return null;
    }
    if (n.compareTo(BigDecimal.valueOf(SpecRules.MAX_DURATION.toMillis())) > 0) {
      problems.at(node, path, "must be at most " + SpecRules.MAX_DURATION.toMillis() + " (one day), got "
          + show(n));
      return null;
    }
    return Durations.ofMillis(n);
  }

  private boolean inRange(Node node, String path, BigDecimal n, long min, long max) {
    if (n.compareTo(BigDecimal.valueOf(min)) < 0) {
      problems.at(node, path, "must be at least " + min + ", got " + show(n));
      return false;
    }
    if (n.compareTo(BigDecimal.valueOf(max)) > 0) {
      problems.at(node, path, "must be at most " + max + ", got " + show(n));
      return false;
    }
    return true;
  }

  private static String show(BigDecimal n) {
    String plain = n.toPlainString();
    return plain.length() <= 24 ? plain : n.toString();
  }

  private BigDecimal number(Node node, String path, String expected) {
    visit(node);
    if (node instanceof ScalarNode s && (isTag(s, Tag.INT) || isTag(s, Tag.FLOAT))) {
      String text = s.getValue().replace("_", "");
      if (text.length() <= 64 && DECIMAL.matcher(text).matches()) {
        return new BigDecimal(text.startsWith("+") ? text.substring(1) : text);
      }
    }
    problems.at(node, path, "expected " + expected + ", got " + describe(node));
    return null;
  }

  public static boolean isTag(Node node, Tag tag) {
    return tag.equals(node.getTag());
  }

  /** How a value reads to a person: {@code a string 'eight'}, {@code a list}, {@code a boolean (yes)}. */
  public static String describe(Node node) {
    if (node instanceof MappingNode) {
      return "a mapping";
    }
    if (node instanceof SequenceNode) {
      return "a list";
    }
    ScalarNode s = (ScalarNode) node;
    String v = s.getValue().length() > 40 ? s.getValue().substring(0, 37) + "..." : s.getValue();
    if (isTag(s, Tag.STR)) {
      return "a string '" + v + "'";
    }
    if (isTag(s, Tag.INT) || isTag(s, Tag.FLOAT)) {
      return "the number " + v;
    }
    if (isTag(s, Tag.BOOL)) {
      return "a boolean (" + v + ")";
    }
    if (isTag(s, Tag.NULL)) {
      return "nothing (null)";
    }
    return "a value tagged " + s.getTag().getValue() + " ('" + v + "')";
  }
}
