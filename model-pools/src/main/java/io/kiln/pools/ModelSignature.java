package io.kiln.pools;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The tensors a model takes and returns: what a request is validated against ({@link RequestValidator})
 * and what OIP metadata lists. Immutable.
 *
 * @param inputs the inputs every request must supply, each exactly once, in the order the model takes them;
 *     a first dimension of -1 is the batch dimension; scalars and fixed first dimensions are passed whole
 *     ({@link TensorSpec#batched})
 * @param outputs the outputs the model produces, in the order it returns them
 * @param streaming whether the model answers a request with a sequence of chunks (each holding these
 *     outputs) rather than once: it is served by the generate / ModelStreamInfer endpoints, not by infer
 */
public record ModelSignature(List<TensorSpec> inputs, List<TensorSpec> outputs, boolean streaming) {

  /** @throws IllegalArgumentException if an input or output name repeats */
  public ModelSignature {
    inputs = List.copyOf(Objects.requireNonNull(inputs, "inputs"));
    outputs = List.copyOf(Objects.requireNonNull(outputs, "outputs"));
    requireUniqueNames("input", inputs);
    requireUniqueNames("output", outputs);
  }

  /** The signature of a model that answers each request once. */
  public ModelSignature(List<TensorSpec> inputs, List<TensorSpec> outputs) {
    this(inputs, outputs, false);
  }

  public List<String> inputNames() {
    return inputs.stream().map(TensorSpec::name).toList();
  }

  public List<String> outputNames() {
    return outputs.stream().map(TensorSpec::name).toList();
  }

  private static void requireUniqueNames(String what, List<TensorSpec> specs) {
    Set<String> seen = new HashSet<>();
    for (TensorSpec s : specs) {
      if (!seen.add(s.name())) {
        throw new IllegalArgumentException("the signature declares " + what + " '" + s.name() + "' twice");
      }
    }
  }
}
