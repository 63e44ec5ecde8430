package io.kiln.pipelines;

import io.kiln.pools.TensorSpec;
import java.util.List;
import java.util.Objects;

/**
 * The pool an infer step calls: a deployment's serving version and the inputs its model declares (to
 * decode cached files into tensors).
 */
public record InferTarget(String deployment, String version, List<TensorSpec> inputs) {

  public InferTarget {
    Objects.requireNonNull(deployment, "deployment");
    Objects.requireNonNull(version, "version");
    inputs = List.copyOf(inputs);
  }
}
