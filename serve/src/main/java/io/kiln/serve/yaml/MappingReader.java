package io.kiln.serve.yaml;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads the fields of one mapping by name. Every name asked for counts as known, so {@link #finish()} can
 * report the fields nobody asked for as unknown, with a suggestion among the known ones (for a Ray Serve field,
 * where Kiln keeps that setting: {@link Suggestions#foreign}). Duplicate keys
 * are reported; YAML merge keys ({@code <<: *defaults}) are applied, explicit keys winning.
 *
 * <p>A reader may be <em>absent</em> (the section is not in the file: all fields read as absent and
 * positions point at the enclosing mapping) or <em>invalid</em> (the section is not a mapping, already
 * reported: fields read as absent and missing required fields are not reported again).
 */
public final class MappingReader {

  private final Reading reading;
  private final Node anchor;
  private final String path;
  private final Kind kind;
  private final Map<String, NodeTuple> entries = new LinkedHashMap<>();
  private final Set<String> known = new LinkedHashSet<>();
  private final Set<String> ignored = new LinkedHashSet<>();

  MappingReader(Reading reading, MappingNode node, String path) {
    this(reading, node, path, Kind.PRESENT);
    Map<String, NodeTuple> merged = new LinkedHashMap<>();
    for (NodeTuple t : node.getValue()) {
      if (Reading.isTag(t.getKeyNode(), Tag.MERGE)) {
        merge(t.getValueNode(), merged, Collections.newSetFromMap(new IdentityHashMap<>()));
        continue;
      }
      String key = key(t.getKeyNode());
      if (key == null) {
        continue;
      }
      NodeTuple first = entries.putIfAbsent(key, t);
      if (first != null) {
        var firstMark = first.getKeyNode().getStartMark();
        problems().at(t.getKeyNode(), path(key), "duplicate key '" + key + "'"
            + (firstMark == null ? "" : " (first at line " + (firstMark.getLine() + 1) + ")"));
      }
    }
    merged.forEach(entries::putIfAbsent);
  }

  private MappingReader(Reading reading, Node anchor, String path, Kind kind) {
    this.reading = reading;
    this.anchor = anchor;
    this.path = path;
    this.kind = kind;
  }

  private enum Kind { PRESENT, ABSENT, INVALID }

  /** A section missing from the file, positioned at {@code anchor} (the enclosing mapping). */
  static MappingReader absent(Reading reading, Node anchor, String path) {
    return new MappingReader(reading, anchor, path, Kind.ABSENT);
  }

  static MappingReader invalid(Reading reading, Node anchor, String path) {
    return new MappingReader(reading, anchor, path, Kind.INVALID);
  }

  private String key(Node keyNode) {
    reading.visit(keyNode);
    if (keyNode instanceof ScalarNode s && !Reading.isTag(s, Tag.NULL)) {
      return s.getValue();
    }
    problems().at(keyNode, path, "keys must be plain names, got " + Reading.describe(keyNode));
    return null;
  }

  /** Applies {@code <<: *a} and {@code <<: [*a, *b]}: earlier sources win, as YAML specifies. */
  private void merge(Node source, Map<String, NodeTuple> into, Set<Node> seen) {
    reading.visit(source);
    if (source instanceof SequenceNode s) {
      for (Node n : s.getValue()) {
        merge(n, into, seen);
      }
    } else if (source instanceof MappingNode m) {
      if (!seen.add(m)) {
        return;
      }
      for (NodeTuple t : m.getValue()) {
        if (Reading.isTag(t.getKeyNode(), Tag.MERGE)) {
          merge(t.getValueNode(), into, seen);
        } else {
          String key = key(t.getKeyNode());
          if (key != null) {
            into.putIfAbsent(key, t);
          }
        }
      }
    } else {
      problems().at(source, path, "a merge key (<<) needs a mapping or a list of mappings, got "
          + Reading.describe(source));
    }
  }

  private Problems problems() {
    return reading.problems();
  }

  public String path() {
    return path;
  }

  /** The schema path of field {@code key}. */
  public String path(String key) {
    return path.isEmpty() ? key : path + "." + key;
  }

  /** Whether this is a mapping present in the file. */
  public boolean present() {
    return kind == Kind.PRESENT;
  }

  /** False for a section that is in the file but is not a mapping (already reported). */
  public boolean valid() {
    return kind != Kind.INVALID;
  }

  /** The mapping node, or for an absent section the enclosing one. */
  public Node node() {
    return anchor;
  }

  /** Whether the field is given (with a value other than null). Marks the name known. */
  public boolean has(String key) {
    return value(key) != null;
  }

  /** The field's value node, or null if absent or null. Marks the name known. */
  public Node value(String key) {
    known.add(key);
    NodeTuple t = entries.get(key);
    if (t == null || Reading.isTag(t.getValueNode(), Tag.NULL)) {
      return null;
    }
    return t.getValueNode();
  }

  /** Where to report a problem about {@code key}: its value, else this mapping. */
  public Node at(String key) {
    Node v = value(key);
    return v != null ? v : anchor;
  }

  /** Where the key itself is written, else this mapping. */
  public Node keyAt(String key) {
    known.add(key);
    NodeTuple t = entries.get(key);
    return t != null ? t.getKeyNode() : anchor;
  }

  /** The value of a required field, or null after reporting that it is missing. */
  public Node required(String key) {
    Node v = value(key);
    if (v == null && kind != Kind.INVALID) {
      NodeTuple t = entries.get(key);
      if (t != null) {
        problems().at(t.getValueNode(), path(key), "'" + key + "' needs a value");
      } else {
        problems().at(anchor, path(key), "missing required field '" + key + "'");
      }
    }
    return v;
  }

  public String requiredText(String key) {
    Node v = required(key);
    return v == null ? null : reading.text(v, path(key));
  }

  /** The field's text, {@code dflt} if absent, null if wrong. */
  public String text(String key, String dflt) {
    Node v = value(key);
    return v == null ? dflt : reading.text(v, path(key));
  }

  /** The field as a boolean; {@code dflt} if absent, null if wrong. */
  public Boolean bool(String key, Boolean dflt) {
    Node v = value(key);
    return v == null ? dflt : reading.bool(v, path(key));
  }

  public Long requiredInteger(String key, long min, long max) {
    Node v = required(key);
    return v == null ? null : reading.integer(v, path(key), min, max);
  }

  /** The field as an integer in [min, max]; {@code dflt} if absent, null if wrong. */
  public Integer integer(String key, Integer dflt, int min, int max) {
    Node v = value(key);
    if (v == null) {
      return dflt;
    }
    Long n = reading.integer(v, path(key), min, max);
    return n == null ? null : n.intValue();
  }

  public BigDecimal decimal(String key, BigDecimal dflt, long min, long max) {
    Node v = value(key);
    return v == null ? dflt : reading.decimal(v, path(key), min, max);
  }

  /** A {@code *_ms} field; {@code positive} refuses 0. {@code dflt} if absent, null if wrong. */
  public Duration millis(String key, Duration dflt, boolean positive) {
    Node v = value(key);
    return v == null ? dflt : reading.millis(v, path(key), positive ? 1 : 0);
  }

  /** A nested section: present, absent (positioned here) or invalid (reported). */
  public MappingReader section(String key) {
    Node v = value(key);
    return v == null ? absent(reading, anchor, path(key)) : reading.mapping(v, path(key));
  }

  /** A list field's items; null if absent (reported when {@code required}) or not a list (reported). */
  public List<Node> list(String key, boolean required) {
    Node v = required ? required(key) : value(key);
    return v == null ? null : reading.list(v, path(key));
  }

  /** Every field in file order, as (key node, value node), marking all of them known. */
  public List<NodeTuple> entries() {
    known.addAll(entries.keySet());
    return new ArrayList<>(entries.values());
  }

  /** Treats every field whose name starts with {@code prefix} as known and ignores it. */
  public void ignorePrefix(String prefix) {
    entries.keySet().stream().filter(k -> k.startsWith(prefix)).forEach(ignored::add);
  }

  /** Reports every field nobody asked for. Call after reading all known fields. */
  public void finish() {
    for (Map.Entry<String, NodeTuple> e : entries.entrySet()) {
      if (!known.contains(e.getKey()) && !ignored.contains(e.getKey())) {
        String key = e.getKey();
        String hint = Suggestions.foreign(key, known).map(s -> " (a Ray Serve field); " + s)
            .or(() -> Suggestions.closest(key, known).map(s -> "; did you mean '" + s + "'?"))
            .orElse("; expected one of: " + String.join(", ", known));
        problems().at(e.getValue().getKeyNode(), path(key), "unknown field '" + key + "'" + hint);
      }
    }
  }
}
