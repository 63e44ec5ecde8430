package io.kiln.pipelines.impl;

import io.kiln.pipelines.InputFormat;
import io.kiln.pools.TensorSpec;
import java.util.List;

/**
 * One attempt of a group of a job's inputs, sent (CBOR) to the node that fetches and analyses them all: one
 * runtime task, one placement and one reply for the group instead of one per input. At most
 * {@value #MAX_INPUTS} inputs.
 *
 * @param indices the inputs' places in the job (reported back with their phase and outcomes)
 * @param uris the inputs, in the order of {@code indices}
 * @param inputs the model's declared inputs (to decode the files)
 * @param timeoutMs how long one input's fetch, and the group's analyses, may take
 * @param low whether its requests go to the pool at {@link io.kiln.pools.RequestContext.Priority#LOW} (the job's
 *     {@code priority: low}): queued online requests go first
 */
public record JobBatch(String jobId, List<Integer> indices, List<String> uris, String deployment, String version,
                       List<TensorSpec> inputs, InputFormat format, String tensor, long maxBytes, long timeoutMs,
                       boolean low) {

  /** Where a task reports that its inputs were fetched and went to the pool: {@code <prefix><jobId>}. */
  public static final String PHASE_ADDRESS = "kiln.jobs.phase.";
  /** Inputs in one batch at most. */
  public static final int MAX_INPUTS = 64;

  public JobBatch {
    indices = List.copyOf(indices);
    uris = List.copyOf(uris);
    inputs = List.copyOf(inputs);
    if (indices.isEmpty() || indices.size() != uris.size() || indices.size() > MAX_INPUTS) {
      throw new IllegalArgumentException("a job batch has 1 to " + MAX_INPUTS + " inputs, each with its index; got "
          + indices.size() + " indices and " + uris.size() + " URIs");
    }
  }

  public int size() {
    return indices.size();
  }
}
