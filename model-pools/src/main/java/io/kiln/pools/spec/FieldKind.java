package io.kiln.pools.spec;

/**
 * What a model-spec field holds, as YAML writes it: how a generic reader or writer treats it. The kinds a reader
 * handles alike ({@link #TEXT}, {@link #BOOL}, {@link #INT}, {@link #ENUM}, {@link #MAP}) need no code per field; the
 * others are read by the reader the kind names.
 */
public enum FieldKind {
  /** A path, {@code builtin:<name>} or remote URI, as text ({@code java.nio.file.Path} in the spec). */
  PATH("path or URI"),
  /** Free text. */
  TEXT("text"),
  /** {@code true} or {@code false}. */
  BOOL("boolean"),
  /** A whole number within the field's YAML range. */
  INT("integer"),
  /** One of a list of names (the field's choices). */
  ENUM("name"),
  /** A list of whole numbers, each within the field's YAML range. */
  INT_LIST("list of integers"),
  /** A list of {@code {name, datatype, shape}}. */
  TENSORS("list of tensors"),
  /** Names to single values (text, number or boolean), kept as text. */
  MAP("mapping"),
  /** A nested mapping read by a reader of its own. */
  SECTION("section");

  private final String text;

  FieldKind(String text) {
    this.text = text;
  }

  /** The kind as docs/yaml.md names it. */
  public String text() {
    return text;
  }
}
