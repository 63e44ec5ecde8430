package io.kiln.gateway;

import io.kiln.pools.ModelSignature;
import io.kiln.pools.TensorSpec;
import java.util.List;
import java.util.Objects;

/**
 * What the gateway knows of one version of a deployed model: enough to answer OIP metadata and readiness
 * and to validate requests before they are routed. The tensors are the pools' own {@link ModelSignature},
 * so the gateway validates requests by the very spec the pools run.
 *
 * @param name the model (deployment) name
 * @param version this version
 * @param versions every version of the model the server holds, including {@code version}
 * @param platform the OIP platform string, e.g. {@code "pytorch_torchscript"}
 * @param signature the inputs every request must supply, each exactly once, and the outputs the model produces
 * @param ready whether at least one pool can serve this version now
 * @param maxBatchSize the largest first dimension a request may carry; 0 means the model does not batch
 *     and the first dimension is not limited
 * @param multiplexed set for a model of a multiplexed deployment's repository, null otherwise
 * @param config how the model's pools batch and how many workers run it, for {@code /v2/models/{m}/config};
 *     null when the directory does not know (the config then reports no batching and no instance group)
 */
public record ModelInfo(String name, String version, List<String> versions, String platform,
                        ModelSignature signature, boolean ready, int maxBatchSize, Multiplexed multiplexed,
                        Config config) {

  /**
   * The serving configuration of the model's pools.
   *
   * @param poolMaxBatchSize the most rows the pool combines into one batch (1: no batching)
   * @param maxQueueDelayMicros how long the pool holds a batch open for more requests
   * @param instanceCount workers per node ({@code instanceKind} {@code KIND_CPU}) or per GPU ({@code KIND_GPU})
   * @param instanceKind {@code KIND_CPU} or {@code KIND_GPU}
   */
  public record Config(int poolMaxBatchSize, long maxQueueDelayMicros, int instanceCount, String instanceKind) {
    public Config {
      Objects.requireNonNull(instanceKind, "instanceKind");
    }
  }

  /** A model whose directory reports no {@link Config}. */
  public ModelInfo(String name, String version, List<String> versions, String platform, ModelSignature signature,
                   boolean ready, int maxBatchSize, Multiplexed multiplexed) {
    this(name, version, versions, platform, signature, ready, maxBatchSize, multiplexed, null);
  }

  /**
   * A model of a multiplexed deployment's repository: requests for it go to the deployment's pools, which load it
   * on demand; its own readiness ({@code /v2/models/{m}/ready}) says whether a pool holds it loaded.
   *
   * @param deployment the deployment whose pools serve it
   * @param loaded whether some pool of the deployment holds it loaded now
   */
  public record Multiplexed(String deployment, boolean loaded) {
    public Multiplexed {
      Objects.requireNonNull(deployment, "deployment");
    }
  }

  /** A model that is a deployment of its own. */
  public ModelInfo(String name, String version, List<String> versions, String platform, ModelSignature signature,
                   boolean ready, int maxBatchSize) {
    this(name, version, versions, platform, signature, ready, maxBatchSize, null, null);
  }

  /**
   * @throws IllegalArgumentException if {@code versions} lacks {@code version} or {@code maxBatchSize} is
   *     negative
   */
  public ModelInfo {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(platform, "platform");
    Objects.requireNonNull(signature, "signature");
    versions = List.copyOf(versions);
    if (!versions.contains(version)) {
      throw new IllegalArgumentException("versions " + versions + " of model '" + name + "' lack its version '" + version + "'");
    }
    if (maxBatchSize < 0) {
      throw new IllegalArgumentException("maxBatchSize of model '" + name + "' must be >= 0, got " + maxBatchSize);
    }
  }

  /** The signature's inputs. */
  public List<TensorSpec> inputs() {
    return signature.inputs();
  }

  /** The signature's outputs. */
  public List<TensorSpec> outputs() {
    return signature.outputs();
  }

  /** A copy with another readiness. */
  public ModelInfo withReady(boolean nowReady) {
    return new ModelInfo(name, version, versions, platform, signature, nowReady, maxBatchSize, multiplexed, config);
  }

  /** The deployment whose pools serve requests for this model: its own name, or a multiplexed deployment's. */
  public String deployment() {
    return multiplexed == null ? name : multiplexed.deployment();
  }

  /** The model's readiness as OIP reports it: a repository model is ready once loaded (and its pools are). */
  public boolean loadedAndReady() {
    return ready && (multiplexed == null || multiplexed.loaded());
  }
}
