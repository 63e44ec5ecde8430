package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.pools.InferenceException;
import java.util.Optional;

/** Resolves the model a request names, with the OIP errors for unknown (404) and not-ready (503) models. */
final class ModelLookup {

  private final ModelDirectory directory;

  ModelLookup(ModelDirectory directory) {
    this.directory = directory;
  }

  /**
   * @param versionOrNull a version, or null / empty for the serving one
   * @throws InferenceException kind NOT_FOUND
   */
  ModelInfo find(String name, String versionOrNull) {
    String version = versionOrNull == null || versionOrNull.isEmpty() ? null : versionOrNull;
    Optional<ModelInfo> m = directory.model(name, version);
    if (m.isPresent()) {
      return m.get();
    }
    if (version != null && directory.model(name, null).isPresent()) {
      throw InferenceException.notFound("model '" + name + "' has no version '" + version + "'");
    }
    throw InferenceException.notFound("model '" + name + "' not found");
  }

  /**
   * @throws InferenceException kind NOT_FOUND, or UNAVAILABLE if the model is not ready
   */
  ModelInfo findReady(String name, String versionOrNull) {
    ModelInfo m = find(name, versionOrNull);
    if (!m.ready()) {
      throw InferenceException.unavailable("model '" + m.name() + "' version '" + m.version() + "' is not ready");
    }
    return m;
  }

  /** The metrics label for a model name: the name if the directory knows it, else a fixed placeholder. */
  String label(String name) {
    return name != null && directory.model(name, null).isPresent() ? name : GatewayMetrics.UNKNOWN_MODEL;
  }

  /** Why the server is not ready, or null if it is: every model's serving version must be ready. */
  String notReadyReason() {
    for (ModelInfo m : directory.models()) {
      if (!m.ready()) {
        return "model '" + m.name() + "' version '" + m.version() + "' is not ready";
      }
    }
    return null;
  }
}
