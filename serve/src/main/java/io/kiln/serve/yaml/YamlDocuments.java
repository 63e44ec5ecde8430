package io.kiln.serve.yaml;

import java.io.StringReader;
import java.util.HashSet;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.composer.Composer;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.events.AliasEvent;
import org.yaml.snakeyaml.events.CollectionEndEvent;
import org.yaml.snakeyaml.events.CollectionStartEvent;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.StreamReader;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * Composes YAML text into a node tree whose nodes keep their line and column, under limits that make
 * hostile input cheap to refuse: size, nesting depth and aliases to collections ("billion laughs").
 * Nothing is constructed into Java objects. Stateless; thread-safe.
 */
public final class YamlDocuments {

  /** Deepest nesting accepted; the schema itself is seven levels deep. */
  public static final int MAX_DEPTH = 32;
  /** Aliases to mappings or lists accepted per document; a few are plenty for shared defaults. */
  public static final int MAX_COLLECTION_ALIASES = 16;

  private YamlDocuments() {
  }

  /**
   * The document's root node, or null for an empty document.
   *
   * @throws Problems.Abort after reporting a syntax error or an exceeded limit
   */
  public static Node compose(String text, int maxCodePoints, Problems problems) {
    LoaderOptions options = options(maxCodePoints);
    try {
      Composer composer = new Composer(new ParserImpl(new StreamReader(new StringReader(text)), options),
          new Resolver(), options);
      return composer.getSingleNode();
    } catch (MarkedYAMLException e) {
      Mark mark = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
      String message = "YAML syntax error: " + e.getProblem();
      if (e.getContext() != null && e.getContextMark() != null) {
        message += " (" + e.getContext() + " at line " + (e.getContextMark().getLine() + 1) + ")";
      }
      throw problems.fatal(mark, "", message);
    } catch (YAMLException e) {
      // SnakeYAML's limit errors carry no position: find it with a second, event-level pass.
      String message = e.getMessage() == null ? "" : e.getMessage();
      if (message.contains("Nesting Depth")) {
        throw problems.fatal(locate(text, options, true), "",
            "the document nests deeper than " + MAX_DEPTH + " levels");
      }
      if (message.contains("aliases")) {
        throw problems.fatal(locate(text, options, false), "",
            "the document uses more than " + MAX_COLLECTION_ALIASES
                + " aliases to mappings or lists; refusing it as a possible alias bomb");
      }
      throw problems.fatal((Mark) null, "", "cannot read YAML: " + message);
    }
  }

  private static LoaderOptions options(int maxCodePoints) {
    LoaderOptions options = new LoaderOptions();
    options.setMaxAliasesForCollections(MAX_COLLECTION_ALIASES);
    options.setNestingDepthLimit(MAX_DEPTH);
    options.setCodePointLimit(maxCodePoints);
    options.setAllowRecursiveKeys(false);
    // Duplicates are reported by the reader, with both positions.
    options.setAllowDuplicateKeys(true);
    return options;
  }

  /** Where the depth or alias limit is first exceeded, or null if the event pass does not see it. */
  private static Mark locate(String text, LoaderOptions options, boolean depth) {
    try {
      ParserImpl parser = new ParserImpl(new StreamReader(new StringReader(text)), options);
      int level = 0;
      int aliases = 0;
      Set<String> collectionAnchors = new HashSet<>();
      while (parser.peekEvent() != null) {
        Event e = parser.getEvent();
        if (e instanceof CollectionStartEvent c) {
          level++;
          if (c.getAnchor() != null) {
            collectionAnchors.add(c.getAnchor());
          }
          if (depth && level > MAX_DEPTH) {
            return e.getStartMark();
          }
        } else if (e instanceof CollectionEndEvent) {
          level--;
        } else if (e instanceof AliasEvent a && collectionAnchors.contains(a.getAnchor())) {
          if (!depth && ++aliases > MAX_COLLECTION_ALIASES) {
            return e.getStartMark();
          }
        }
        if (e.is(Event.ID.StreamEnd)) {
          break;
        }
      }
    } catch (YAMLException ignored) {
      // The composer already failed; a position is a nicety.
    }
    return null;
  }
}
