package io.kiln.gateway.spi;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * What the control plane's APIs (module {@code control-plane}: the repository extension and the dashboard) ask of the
 * pools: each pool's state as it reported it, and the model control of a multiplexed pool (the repository
 * extension's index, load and unload). It is the other face of the port inference uses: a node's one adapter
 * implements both this and {@link PoolDirectory} over the same load board and pool client, and neither the gateway
 * nor the control plane reaches pools through anything else. The gateway itself never calls it.
 *
 * <p>A sibling rather than more methods on {@link PoolDirectory}, because the two have different clients and
 * different truths: {@link PoolDirectory} is the request path's, its endpoints say where a request may go now (a
 * leaving pool is not {@code ready} there) and its contract is about sending, cancelling and deadlines; this one
 * reports what the pools say of themselves (a leaving pool is ready and draining) and changes what they hold. An
 * embedder, or a test fake of the request path, implements only the first; a gateway without management needs no
 * admin at all.
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>Methods must not block: the gateway calls them on Vert.x event loops.</li>
 *   <li>{@link #status} answers from the same snapshot {@link PoolDirectory#pools} answers from: at most one pool per
 *       node, ordered by node id, only pools whose report is fresh and whose node is alive.</li>
 *   <li>The model calls return at once; the stage may complete on any thread. It fails with an
 *       {@link io.kiln.pools.InferenceException} whose kind says what went wrong: UNAVAILABLE when there is no such
 *       pool or it cannot be reached, DEADLINE_EXCEEDED when it did not answer in time, and the pool's own errors as
 *       each method states them.</li>
 * </ol>
 */
public interface PoolAdmin {

  /**
   * The live pools of one deployment version as they last reported; empty if none.
   *
   * @param deployment the deployment's name
   * @param version its version (never null)
   */
  List<PoolStatus> status(String deployment, String version);

  /**
   * The models of the multiplexed pool on {@code nodeId}, each with its state: {@code READY} (a worker holds it),
   * {@code LOADING}, or {@code UNAVAILABLE} (not loaded; a request loads it); empty for a pool of one model.
   */
  CompletionStage<Map<String, String>> models(String deployment, String version, String nodeId);

  /**
   * Loads {@code model} onto a worker of the multiplexed pool on {@code nodeId} unless one holds it (or joins the
   * load running); completes, once it is loaded, with whether a load ran. Besides the contract's errors: NOT_FOUND
   * (not in the pool's repository), INVALID_INPUT (the pool is not multiplexed), INTERNAL (the model failed to load),
   * {@link io.kiln.pools.CapacityExceededException} (as many loads run as the pool allows).
   */
  CompletionStage<Boolean> loadModel(String deployment, String version, String nodeId, String model);

  /**
   * Closes {@code model} on every worker of the multiplexed pool on {@code nodeId} that holds it (a later request
   * loads it again); completes with how many did.
   */
  CompletionStage<Integer> unloadModel(String deployment, String version, String nodeId, String model);
}
