package io.kiln.serve.impl;

import io.kiln.pools.ModelSignature;
import io.kiln.pools.TensorSpec;
import io.kiln.serve.GraphSpec;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Suggestions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.yaml.snakeyaml.nodes.Node;

/**
 * The tensors one graph's sources may name while its steps are read in order: the request's inputs, then each step's
 * outputs as its step is read. Resolves a source's text to a {@link GraphSpec.Source}, reporting at its position an
 * unknown input, an unknown, later or same step, an output its model does not declare, and a datatype or shape that
 * does not fit the reader of the tensor (both declared). Not thread-safe: one per graph.
 */
final class GraphSources {

  /** A step read so far: its name and, when its deployment is known here, its model's signature. */
  private record Known(String name, String deployment, ModelSignature signature) {
  }

  private final Problems problems;
  private final List<TensorSpec> inputs; // null: the graph's inputs have problems of their own (reported)
  /** Every step's name in file order (null where missing), read before the steps, to tell later steps apart. */
  private final List<String> stepNames;
  private final List<Known> steps = new ArrayList<>();

  GraphSources(Problems problems, List<TensorSpec> inputs, List<String> stepNames) {
    this.problems = problems;
    this.inputs = inputs;
    this.stepNames = stepNames;
  }

  /** Where the first step of that name is in the file, or -1. */
  int indexOf(String name) {
    return stepNames.indexOf(name);
  }

  /** Makes step {@code index}'s outputs readable by the steps after it. */
  void stepRead(String name, String deployment, ModelSignature signature) {
    steps.add(new Known(name, deployment, signature));
  }

  /**
   * The source {@code text} names, read by step {@code reader} (its index; the number of steps for the graph's
   * outputs), or null after reporting why not.
   *
   * @param consumer the tensor reading it where declared (null: unknown), for the datatype and shape checks
   * @param what the reader in messages, e.g. "input 'prob' of ocr-crop"
   */
  GraphSpec.Source resolve(String text, Node at, String path, int reader, TensorSpec consumer, String what) {
    GraphSpec.Source s;
    try {
      s = GraphSpec.Source.parse(text);
    } catch (IllegalArgumentException e) {
      problems.at(at, path, e.getMessage());
      return null;
    }
    TensorSpec produced;
    if (s.request() && inputs == null) {
      produced = null;
    } else if (s.request()) {
      produced = inputs.stream().filter(t -> t.name().equals(s.tensor())).findFirst().orElse(null);
      if (produced == null) {
        List<String> names = inputs.stream().map(TensorSpec::name).toList();
        problems.at(at, path, "the graph has no input '" + s.tensor() + "'" + Suggestions.didYouMean(s.tensor(), names)
            + (names.isEmpty() ? "" : "; its inputs: " + String.join(", ", names)));
        return null;
      }
    } else {
      Known producer = producer(s, at, path, reader);
      if (producer == null) {
        return null;
      }
      produced = output(producer, s, at, path);
      if (produced == null && producer.signature() != null && !producer.signature().outputs().isEmpty()) {
        return null;
      }
    }
    if (produced != null && s.row() >= 0) {
      long[] shape = produced.shape();
      if (shape.length == 0) {
        problems.at(at, path, s.step() + "." + s.tensor() + " is a scalar; it has no rows to select [" + s.row() + "]");
        return null;
      }
      if (shape[0] >= 0 && s.row() >= shape[0]) {
        problems.at(at, path, s.step() + "." + s.tensor() + " has " + shape[0] + " rows; there is no row " + s.row());
        return null;
      }
      produced = new TensorSpec(produced.name(), produced.datatype(), Arrays.copyOfRange(shape, 1, shape.length));
    }
    return produced == null || consumer == null || fits(produced, consumer, s, at, path, what) ? s : null;
  }

  private Known producer(GraphSpec.Source s, Node at, String path, int reader) {
    for (Known k : steps) {
      if (k.name().equals(s.step())) {
        return k;
      }
    }
    int index = stepNames.indexOf(s.step());
    if (index == reader) {
      problems.at(at, path, "a step cannot read its own outputs ('" + s.step() + "' is this step)");
    } else if (index > reader) {
      problems.at(at, path, "'" + s.step() + "' is a later step (steps[" + index + "]); a step reads the outputs of"
          + " the steps before it (steps run in order)");
    } else if (index < 0) {
      List<String> earlier = stepNames.subList(0, Math.min(reader, stepNames.size())).stream()
          .filter(java.util.Objects::nonNull).distinct().toList();
      problems.at(at, path, "no step named '" + s.step() + "'" + Suggestions.didYouMean(s.step(), earlier)
          + (earlier.isEmpty() ? "; read the request's inputs as " + GraphSpec.REQUEST + ".NAME"
          : "; earlier steps: " + String.join(", ", earlier) + " (the request's inputs: " + GraphSpec.REQUEST
          + ".NAME)"));
    }
    // else: an earlier step with problems of its own, reported there
    return null;
  }

  /** The producer's declared output the source names; null (reported) if it declares others only, or none. */
  private TensorSpec output(Known producer, GraphSpec.Source s, Node at, String path) {
    if (producer.signature() == null || producer.signature().outputs().isEmpty()) {
      return null;
    }
    for (TensorSpec t : producer.signature().outputs()) {
      if (t.name().equals(s.tensor())) {
        return t;
      }
    }
    List<String> names = producer.signature().outputNames();
    problems.at(at, path, "step '" + producer.name() + "' (" + producer.deployment() + ") has no output '" + s.tensor()
        + "'" + Suggestions.didYouMean(s.tensor(), names) + "; its outputs: " + String.join(", ", names));
    return null;
  }

  private boolean fits(TensorSpec produced, TensorSpec consumer, GraphSpec.Source s, Node at, String path,
                       String what) {
    if (produced.datatype() != consumer.datatype()) {
      problems.at(at, path, "datatype mismatch: " + s + " is " + produced.datatype() + " but " + what + " is "
          + consumer.datatype());
      return false;
    }
    long[] p = produced.shape();
    long[] c = consumer.shape();
    boolean fits = p.length == c.length;
    for (int d = 0; fits && d < p.length; d++) {
      fits = p[d] < 0 || c[d] < 0 || p[d] == c[d];
    }
    if (!fits) {
      String hint = p.length == c.length + 1 && s.row() < 0 ? "; to pass one row of it, write " + s + "[0]" : "";
      problems.at(at, path, "shape mismatch: " + s + " is " + Arrays.toString(p) + " but " + what + " takes "
          + Arrays.toString(c) + hint);
    }
    return fits;
  }
}
