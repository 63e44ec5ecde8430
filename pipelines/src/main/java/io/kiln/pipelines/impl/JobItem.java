package io.kiln.pipelines.impl;

import io.kiln.pipelines.InputFormat;
import io.kiln.pools.TensorSpec;
import java.util.List;

/**
 * One attempt of one job input, sent (CBOR) to the node that fetches and analyses it.
 *
 * @param index the input's place in the job (reported back with its phase)
 * @param inputs the model's declared inputs (to decode the file)
 */
public record JobItem(String jobId, int index, String uri, String deployment, String version, List<TensorSpec> inputs,
                      InputFormat format, String tensor, long maxBytes, long timeoutMs) {

  /** Where a task reports that its input was fetched and is going to the pool: {@code <prefix><jobId>}. */
  public static final String PHASE_ADDRESS = "kiln.jobs.phase.";

  public JobItem {
    inputs = List.copyOf(inputs);
  }
}
