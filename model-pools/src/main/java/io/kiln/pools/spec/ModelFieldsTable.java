package io.kiln.pools.spec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;

/**
 * The model section's field table of docs/yaml.md, rendered from {@link ModelFields}: the doc holds it between
 * {@link #START} and {@link #END}, and model-pools' {@code ModelFieldsTableTest} fails when the two differ. Run
 * {@link #main} to rewrite the doc's table after changing the schema. Stateless.
 */
public final class ModelFieldsTable {

  public static final String START = "<!-- model-fields: generated from io.kiln.pools.spec.ModelFields -->";
  public static final String END = "<!-- /model-fields -->";

  private ModelFieldsTable() {
  }

  /** The table in Markdown, one row per field, in the schema's order. */
  public static String render() {
    String rows = ModelFields.ALL.stream().map(ModelFieldsTable::row).collect(Collectors.joining("\n"));
    return "| field | kind | default | engine | what |\n|---|---|---|---|---|\n" + rows + "\n";
  }

  private static String row(ModelField f) {
    String name = "`" + (f.place() == ModelField.Place.DEPLOYMENT ? f.yaml() : "model." + f.yaml()) + "`";
    String kind = f.kind().text();
    if (f.kind() == FieldKind.ENUM && f != ModelFields.ENGINE) { // the engines are the class path's, not the doc's
      kind += ": " + String.join(", ", f.choices().get());
    } else if (f.min() != Long.MIN_VALUE) {
      kind += ", " + f.min() + ".." + f.max();
    }
    String engine = f.owner().isEmpty() ? "all" : f.owner();
    return "| " + name + " | " + kind + " | " + cell(f.defaultText()) + " | " + engine + " | " + cell(f.doc()) + " |";
  }

  private static String cell(String text) {
    return text.replace("|", "\\|");
  }

  /** {@code doc} with the text between the markers replaced by {@link #render()}. */
  public static String replaceIn(String doc) {
    int start = doc.indexOf(START);
    int end = doc.indexOf(END);
    if (start < 0 || end < start) {
      throw new IllegalArgumentException("the doc lacks the markers " + START + " ... " + END);
    }
    return doc.substring(0, start + START.length()) + "\n" + render() + doc.substring(end);
  }

  /** The generated part of {@code doc}, as it stands. */
  public static String current(String doc) {
    int start = doc.indexOf(START);
    int end = doc.indexOf(END);
    if (start < 0 || end < start) {
      throw new IllegalArgumentException("the doc lacks the markers " + START + " ... " + END);
    }
    return doc.substring(start + START.length() + 1, end);
  }

  /** Rewrites the table in the file {@code args[0]} (default {@code docs/yaml.md}). */
  public static void main(String[] args) throws IOException {
    Path doc = Path.of(args.length > 0 ? args[0] : "docs/yaml.md");
    Files.writeString(doc, replaceIn(Files.readString(doc, StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
  }
}
