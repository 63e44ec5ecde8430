package io.kiln.gateway;

import io.kiln.pools.TensorSpec;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What the gateway knows of one version of a deployed model: enough to answer OIP metadata and readiness
 * and to validate requests before they are routed.
 *
 * @param name the model (deployment) name
 * @param version this version
 * @param versions every version of the model the server holds, including {@code version}
 * @param platform the OIP platform string, e.g. {@code "pytorch_torchscript"}
 * @param inputs the inputs every request must supply, each exactly once
 * @param outputs the outputs the model produces
 * @param ready whether at least one pool can serve this version now
 * @param maxBatchSize the largest first dimension a request may carry; 0 means the model does not batch
 *     and the first dimension is not limited
 */
public record ModelInfo(String name, String version, List<String> versions, String platform,
                        List<TensorSpec> inputs, List<TensorSpec> outputs, boolean ready, int maxBatchSize) {

  /**
   * @throws IllegalArgumentException if {@code versions} lacks {@code version}, a tensor name repeats, or
   *     {@code maxBatchSize} is negative
   */
  public ModelInfo {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(platform, "platform");
    versions = List.copyOf(versions);
    inputs = List.copyOf(inputs);
    outputs = List.copyOf(outputs);
    if (!versions.contains(version)) {
      throw new IllegalArgumentException("versions " + versions + " of model '" + name + "' lack its version '" + version + "'");
    }
    requireUniqueNames(name, "input", inputs);
    requireUniqueNames(name, "output", outputs);
    if (maxBatchSize < 0) {
      throw new IllegalArgumentException("maxBatchSize of model '" + name + "' must be >= 0, got " + maxBatchSize);
    }
  }

  /** A copy with another readiness. */
  public ModelInfo withReady(boolean nowReady) {
    return new ModelInfo(name, version, versions, platform, inputs, outputs, nowReady, maxBatchSize);
  }

  private static void requireUniqueNames(String model, String what, List<TensorSpec> specs) {
    Set<String> seen = new HashSet<>();
    for (TensorSpec s : specs) {
      if (!seen.add(s.name())) {
        throw new IllegalArgumentException("model '" + model + "' declares " + what + " '" + s.name() + "' twice");
      }
    }
  }
}
