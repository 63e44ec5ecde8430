package io.kiln.deploy.node;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.ModelDirectory;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The models a node's gateway serves: the serve controller's (another {@link ModelDirectory}) and, while they
 * last, the node's own {@link #internal internal} ones (its warm-up model), which only this node's gateway
 * knows, which it never lists and does not meter. Internal names start with '_', which no deployment's can.
 * Thread-safe and non-blocking.
 */
final class NodeModelDirectory implements ModelDirectory {

  private final ModelDirectory served;
  // Replaced whole, so the gateway reads it on every request without a lock.
  private volatile Map<String, ModelInfo> internal = Map.of();

  NodeModelDirectory(ModelDirectory served) {
    this.served = served;
  }

  @Override
  public List<ModelInfo> models() {
    return served.models();
  }

  @Override
  public Optional<ModelInfo> model(String name, String versionOrNull) {
    ModelInfo own = internal.get(name);
    if (own != null) {
      return versionOrNull == null || versionOrNull.equals(own.version()) ? Optional.of(own) : Optional.empty();
    }
    return served.model(name, versionOrNull);
  }

  @Override
  public boolean internal(String name) {
    return internal.containsKey(name);
  }

  synchronized void addInternal(ModelInfo model) {
    Map<String, ModelInfo> next = new HashMap<>(internal);
    next.put(model.name(), model);
    internal = Map.copyOf(next);
  }

  synchronized void removeInternal(String name) {
    Map<String, ModelInfo> next = new HashMap<>(internal);
    next.remove(name);
    internal = Map.copyOf(next);
  }
}
