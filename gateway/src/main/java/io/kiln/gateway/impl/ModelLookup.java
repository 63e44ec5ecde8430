package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.pools.InferenceException;
import java.util.Optional;

/**
 * Resolves the model a request names, with the OIP errors for unknown (404) and not-ready (503) models; while
 * a readiness hold is in place every model but the directory's internal ones reads not ready.
 */
final class ModelLookup {

  private final ModelDirectory directory;
  private final ReadinessHolds holds;

  ModelLookup(ModelDirectory directory, ReadinessHolds holds) {
    this.directory = directory;
    this.holds = holds;
  }

  /**
   * @param versionOrNull a version, or null / empty for the serving one
   * @throws InferenceException kind NOT_FOUND
   */
  ModelInfo find(String name, String versionOrNull) {
    String version = versionOrNull == null || versionOrNull.isEmpty() ? null : versionOrNull;
    Optional<ModelInfo> m = directory.model(name, version);
    if (m.isPresent()) {
      ModelInfo found = m.get();
      return found.ready() && holds.modelsHeld() && !directory.internal(found.name()) ? found.withReady(false) : found;
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
    if (!m.ready() && holds.modelsHeld() && directory.servesWhileHeld(m.name())) {
      m = directory.model(m.name(), m.version()).orElse(m); // warming up: served, though reading not ready
    }
    if (!m.ready()) {
      String held = holds.modelsReason();
      throw InferenceException.unavailable((held == null ? notReadyMessage(m)
          : "model '" + m.name() + "' version '" + m.version() + "' is not ready")
          + (held != null ? " (server " + held + ")" : ""));
    }
    return m;
  }

  /**
   * The serving version of every model the directory lists, never an internal one, each ready as {@link #find}
   * reads it (not while a readiness hold keeps the models).
   */
  java.util.List<ModelInfo> listed() {
    boolean held = holds.modelsHeld();
    return directory.models().stream().filter(m -> !directory.internal(m.name()))
        .map(m -> held && m.ready() ? m.withReady(false) : m).toList();
  }

  /** Whether {@code name} is one of the node's own models (see {@link ModelDirectory#internal}). */
  boolean internal(String name) {
    return directory.internal(name);
  }

  /**
   * The metrics label for a model name: the name if the directory knows it, else a fixed placeholder;
   * {@link GatewayMetrics#UNMETERED} for an internal model, whose requests are not recorded.
   */
  String label(String name) {
    if (name == null || directory.model(name, null).isEmpty()) {
      return GatewayMetrics.UNKNOWN_MODEL;
    }
    return directory.internal(name) ? GatewayMetrics.UNMETERED : name;
  }

  /**
   * Why the started, unheld server is not ready, or null if it is. By default it is ready whatever its models'
   * state: one failing or loading model must not take the node out of a load balancer and cut every other
   * model off with it; each model reports itself at {@code /v2/models/{m}/ready}. With {@code strict}
   * (Triton's rule) every model's serving version must be ready.
   */
  String notReadyReason(boolean strict) {
    if (!strict) {
      return null;
    }
    for (ModelInfo m : directory.models()) {
      if (!m.ready()) {
        return notReadyMessage(m);
      }
    }
    return null;
  }

  /** "model 'm' version 'v' is not ready", with why where the directory knows. */
  String notReadyMessage(ModelInfo m) {
    String why = directory.notReadyReason(m.name());
    return "model '" + m.name() + "' version '" + m.version() + "' is not ready" + (why != null ? ": " + why : "");
  }
}
