package io.kiln.serve.impl;

import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.YamlDocuments;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Parses JSON with Jackson into the same positioned node tree that {@link YamlDocuments} composes, so one
 * reader validates specs from YAML files and from stored or posted JSON, with line and column either way.
 * (SnakeYAML could read most JSON itself, but not all of it: it refuses the {@code \/} escape.) Stateless;
 * thread-safe.
 */
public final class JsonDocuments {

  private static final JsonFactory FACTORY = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(YamlDocuments.MAX_DEPTH).build())
      .build();
  private static final int[] NO_BUFFER = new int[0];

  private JsonDocuments() {
  }

  /**
   * The root node, or null for empty input.
   *
   * @throws Problems.Abort after reporting malformed JSON
   */
  public static Node parse(String json, Problems problems) {
    try (JsonParser p = FACTORY.createParser(json)) {
      if (p.nextToken() == null) {
        return null;
      }
      Node root = read(p, problems.file());
      if (p.nextToken() != null) {
        throw problems.fatal(mark(p.currentTokenLocation(), problems.file()), "",
            "JSON syntax error: unexpected content after the document");
      }
      return root;
    } catch (JsonProcessingException e) {
      throw problems.fatal(mark(e.getLocation(), problems.file()), "", "JSON syntax error: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw problems.fatal((Mark) null, "", "cannot read JSON: " + e.getMessage());
    }
  }

  private static Node read(JsonParser p, String file) throws IOException {
    Mark start = mark(p.currentTokenLocation(), file);
    JsonToken token = p.currentToken();
    switch (token) {
      case START_OBJECT -> {
        List<NodeTuple> tuples = new ArrayList<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          Mark keyMark = mark(p.currentTokenLocation(), file);
          Node key = new ScalarNode(Tag.STR, p.currentName(), keyMark, keyMark, DumperOptions.ScalarStyle.DOUBLE_QUOTED);
          p.nextToken();
          tuples.add(new NodeTuple(key, read(p, file)));
        }
        return new MappingNode(Tag.MAP, true, tuples, start, start, DumperOptions.FlowStyle.FLOW);
      }
      case START_ARRAY -> {
        List<Node> items = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          items.add(read(p, file));
        }
        return new SequenceNode(Tag.SEQ, true, items, start, start, DumperOptions.FlowStyle.FLOW);
      }
      case VALUE_STRING -> {
        return scalar(Tag.STR, p.getText(), start, DumperOptions.ScalarStyle.DOUBLE_QUOTED);
      }
      case VALUE_NUMBER_INT -> {
        return scalar(Tag.INT, p.getText(), start, DumperOptions.ScalarStyle.PLAIN);
      }
      case VALUE_NUMBER_FLOAT -> {
        return scalar(Tag.FLOAT, p.getText(), start, DumperOptions.ScalarStyle.PLAIN);
      }
      case VALUE_TRUE, VALUE_FALSE -> {
        return scalar(Tag.BOOL, p.getText(), start, DumperOptions.ScalarStyle.PLAIN);
      }
      default -> {
        return scalar(Tag.NULL, "null", start, DumperOptions.ScalarStyle.PLAIN);
      }
    }
  }

  private static Node scalar(Tag tag, String text, Mark mark, DumperOptions.ScalarStyle style) {
    return new ScalarNode(tag, text, mark, mark, style);
  }

  private static Mark mark(JsonLocation loc, String file) {
    if (loc == null || loc.getLineNr() < 1) {
      return null;
    }
    return new Mark(file, (int) Math.max(0, loc.getCharOffset()), loc.getLineNr() - 1,
        Math.max(0, loc.getColumnNr() - 1), NO_BUFFER, 0);
  }
}
