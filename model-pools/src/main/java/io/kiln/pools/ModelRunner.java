package io.kiln.pools;

import java.util.List;
import java.util.OptionalLong;

/**
 * A loaded, warmed model that runs batches of requests: the executor inside one model worker.
 *
 * <p><b>Threading:</b> not thread-safe. One worker thread owns a runner and calls it serially; every
 * method blocks that thread for the duration of the work (a forward pass for {@link #infer}).
 *
 * <p><b>Requests</b> are trusted: they passed the model's {@link RequestValidator} at the edge (the
 * gateway, or the pool manager for requests sent unchecked). A runner checks only what it needs to run a
 * batch at all (each input present, the batch's rows stackable, requested outputs known).
 *
 * <p><b>Errors:</b> a batch that cannot be laid out that way raises an {@link InferenceException} of kind
 * {@link InferenceException.Kind#INVALID_INPUT} (or {@code TOO_LARGE}) whose message names the input;
 * nothing ran and the runner is fine. An {@link InferenceException} of kind
 * {@link InferenceException.Kind#INTERNAL} means the model itself failed this batch and said so (a Python
 * {@code predict} that raised): the batch fails with it and the runner is fine. Any other exception
 * (typically {@link ModelExecutionException}) means the engine or model failed: treat the worker as failed.
 */
public interface ModelRunner extends AutoCloseable {

  /** The spec this runner was loaded from. */
  ModelSpec spec();

  /** Where and how the model was loaded, and how long loading and warm-up took. */
  ModelLoadInfo loadInfo();

  /**
   * Runs one forward pass over {@code batch}: each input is stacked along its first dimension in request
   * order, and each output is split back so that request {@code i} gets exactly its own rows. Outputs are
   * named per the spec, in spec order, or in the order of the request's {@link InferenceRequest#outputs()}
   * when it names some.
   *
   * @return one list of output tensors per request, in request order; empty for an empty batch
   * @throws InferenceException INVALID_INPUT/TOO_LARGE for a batch that cannot run (see the class comment)
   * @throws ModelExecutionException or another runtime exception when the engine fails
   */
  List<List<Tensor>> infer(List<InferenceRequest> batch);

  /**
   * The pid of the operating-system process the model runs in, when that is not this JVM (a Python worker's
   * process); empty for engines inside the JVM. Per-process GPU figures are told by this pid.
   */
  default OptionalLong processId() {
    return OptionalLong.empty();
  }

  /**
   * The memory the loaded model holds, as its engine can tell (see {@link SpecRules#reportsMemory} for what each
   * engine counts); empty when the engine cannot. A multiplexed worker's memory cap adds these up. Cheap enough to
   * call per load; may change over the model's life (a Python process's resident memory does).
   */
  default OptionalLong memoryBytes() {
    return OptionalLong.empty();
  }

  /**
   * Registers the runner's own meters (a decoder's KV cache and scheduler, say) in the node's registry under the
   * worker's {@code tags} (deployment, version, node, worker). Called once, on the worker's thread, after warm-up;
   * the runner removes them when it closes. The default registers none.
   */
  default void bindMeters(io.micrometer.core.instrument.MeterRegistry registry,
                          io.micrometer.core.instrument.Tags tags) {
  }

  /** Frees the model and its native memory; the runner cannot be used afterwards. */
  @Override
  void close();
}
