package io.kiln.gateway.spi;

import io.kiln.gateway.ModelInfo;
import java.util.List;
import java.util.Optional;

/**
 * The models the gateway serves, as the control plane currently sees them.
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>Methods must not block: the gateway calls them on Vert.x event loops for every request. Answer from
 *       an in-memory snapshot that the control plane replaces as deployments change.</li>
 *   <li>Methods may be called from any thread, concurrently.</li>
 *   <li>A model appears here once it is declared, even before any pool is ready; {@link ModelInfo#ready()}
 *       says whether it can serve now (the gateway answers 503 rather than 404 while it cannot).</li>
 *   <li>An {@link #internal internal} model is answered by {@link #model} but never listed by {@link #models}
 *       (the server's readiness does not wait for it).</li>
 * </ol>
 */
public interface ModelDirectory {

  /** The serving version of every model, in a stable order. */
  List<ModelInfo> models();

  /**
   * One version of a model.
   *
   * @param name the model name
   * @param versionOrNull a version, or {@code null} for the serving (latest) version
   * @return empty if there is no such model or no such version of it
   */
  Optional<ModelInfo> model(String name, String versionOrNull);

  /**
   * Whether {@code name} is one of the node's own models rather than a user's, such as the model a node
   * warms its serving path on before it reports ready: it is served like any other while {@link #model}
   * answers for it, but readiness holds ({@link io.kiln.gateway.ReadinessHold}) do not apply to it and its
   * requests are kept out of the gateway's request meters (recorded by the same code into meters nobody
   * scrapes). Called for every request: answer from memory.
   * None by default.
   */
  default boolean internal(String name) {
    return false;
  }

  /**
   * Whether a user's model {@code name} takes inference requests while a readiness hold keeps it reading not
   * ready (its own and the server's readiness stay 503 meanwhile, so load balancers send nothing): a node warming
   * its serving path serves what reaches it anyway, as soon as the model's pool is ready. A model that is not ready
   * is refused whatever this says. Called only while a hold is in place. None by default.
   */
  default boolean servesWhileHeld(String name) {
    return false;
  }

  /**
   * Why model {@code name} is not ready, in a sentence (e.g. its deployment's load error), as its
   * {@code /v2/models/{m}/ready} and a strict {@code /v2/health/ready} report it; null if unknown.
   * Called only for a model that reads not ready. None by default.
   */
  default String notReadyReason(String name) {
    return null;
  }
}
