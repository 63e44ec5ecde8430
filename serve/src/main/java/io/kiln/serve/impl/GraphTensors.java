package io.kiln.serve.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.TensorSpec;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads a graph's declared tensors ({@code inputs}, each of {@code outputs}): name, datatype and shape, with the rules
 * of a model's tensors ({@link Rules}), every problem at its position. Not thread-safe: one per document.
 */
final class GraphTensors {

  private final Reading reading;
  private final Problems problems;

  GraphTensors(Reading reading) {
    this.reading = reading;
    this.problems = reading.problems();
  }

  /** The tensor specs of a list field; null if wrong (reported). */
  List<TensorSpec> list(MappingReader m, String key, boolean isOutput) {
    List<Node> items = m.list(key, true);
    if (items == null) {
      return null;
    }
    if (items.isEmpty()) {
      problems.at(m.at(key), m.path(key), "declare at least one " + (isOutput ? "output" : "input"));
      return null;
    }
    List<TensorSpec> out = new ArrayList<>();
    Map<String, Integer> seenNames = new HashMap<>();
    boolean ok = true;
    for (int i = 0; i < items.size(); i++) {
      MappingReader t = reading.mapping(items.get(i), m.path(key) + "[" + i + "]");
      TensorSpec spec = one(t, i, seenNames, isOutput ? "output" : "input");
      t.finish();
      if (spec == null) {
        ok = false;
      } else {
        out.add(spec);
      }
    }
    return ok ? out : null;
  }

  /** Name, datatype and shape of one tensor entry (the caller finishes the mapping); null if wrong (reported). */
  TensorSpec one(MappingReader t, int index, Map<String, Integer> seenNames, String kind) {
    if (!t.valid()) {
      return null;
    }
    String name = t.requiredText("name");
    if (name != null) {
      Integer first = seenNames.putIfAbsent(name, index);
      String problem = Rules.notBlank(name) != null ? Rules.notBlank(name)
          : first == null ? null : Rules.uniqueTensor(kind, name, first);
      if (problem != null) {
        problems.at(t.at("name"), t.path("name"), problem);
        name = null;
      }
    }
    DataType datatype = null;
    String type = t.requiredText("datatype");
    if (type != null) {
      datatype = DataType.parse(type).orElse(null);
      if (datatype == null) {
        List<String> names = java.util.Arrays.stream(DataType.values()).map(DataType::name).toList();
        problems.at(t.at("datatype"), t.path("datatype"), "unknown datatype '" + type + "'"
            + Suggestions.didYouMean(type, names) + "; expected one of: " + String.join(", ", names));
      }
    }
    long[] shape = shape(t);
    return name == null || datatype == null || shape == null ? null : new TensorSpec(name, datatype, shape);
  }

  private long[] shape(MappingReader t) {
    List<Node> dims = t.list("shape", true);
    if (dims == null) {
      return null;
    }
    String rank = Rules.rank(dims.size());
    if (rank != null) {
      problems.at(t.at("shape"), t.path("shape"), rank);
      return null;
    }
    long[] shape = new long[dims.size()];
    for (int i = 0; i < shape.length; i++) {
      String path = t.path("shape") + "[" + i + "]";
      Long d = reading.integer(dims.get(i), path, Long.MIN_VALUE, Long.MAX_VALUE);
      String problem = d == null ? null : Rules.dimension(d);
      if (d == null || problem != null) {
        if (problem != null) {
          problems.at(dims.get(i), path, problem);
        }
        return null;
      }
      shape[i] = d;
    }
    return shape;
  }
}
