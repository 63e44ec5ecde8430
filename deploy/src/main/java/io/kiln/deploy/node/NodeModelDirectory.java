package io.kiln.deploy.node;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.ModelDirectory;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The models a node's gateway serves: the serve controller's (another {@link ModelDirectory}) and, while they
 * last, the node's own {@link #internal internal} ones (its warm-up model), which only this node's gateway
 * knows, which it never lists and does not meter. Internal names start with '_', which no deployment's can.
 * Thread-safe and non-blocking.
 */
final class NodeModelDirectory implements ModelDirectory {

  private final ModelDirectory served;
  // One map for good: swapping immutable maps of 1 and 0 entries changed its class under the JIT's feet and
  // deoptimized the request path the moment the warm-up model went (measured).
  private final Map<String, ModelInfo> internal = new ConcurrentHashMap<>();

  NodeModelDirectory(ModelDirectory served) {
    this.served = served;
  }

  @Override
  public List<ModelInfo> models() {
    return served.models();
  }

  @Override
  public Optional<ModelInfo> model(String name, String versionOrNull) {
    // The served models first: users' lookups never pay for the internal map, and the warm-up's lookups run
    // through the served directory's code too (they miss there: no deployment name starts with '_').
    Optional<ModelInfo> m = served.model(name, versionOrNull);
    if (m.isPresent()) {
      return m;
    }
    ModelInfo own = internal.get(name);
    return own != null && (versionOrNull == null || versionOrNull.equals(own.version())) ? Optional.of(own) : m;
  }

  @Override
  public String notReadyReason(String name) {
    return served.notReadyReason(name);
  }

  @Override
  public boolean internal(String name) {
    return internal.containsKey(name);
  }

  /**
   * Every user model serves while the node warms, as soon as its pool is ready: the hold keeps load balancers away
   * (the node's and the models' readiness read 503) but a request that reaches this node anyway (pinned to a node,
   * or sent straight to its port) is served rather than refused — refusing it cut off requests pinned to other,
   * ready nodes whenever they entered through a node still warming (issue #37). The node's warm-up traffic goes
   * through this same path.
   */
  @Override
  public boolean servesWhileHeld(String name) {
    return true;
  }

  void addInternal(ModelInfo model) {
    internal.put(model.name(), model);
  }

  void removeInternal(String name) {
    internal.remove(name);
  }
}
