package io.kiln.pipelines.impl;

import io.kiln.pipelines.InputFormat;
import io.kiln.pools.TensorSpec;
import java.util.List;

/**
 * One attempt of one job input, sent (CBOR) to the node that fetches and analyses it.
 *
 * @param inputs the model's declared inputs (to decode the file)
 */
public record JobItem(String jobId, String uri, String deployment, String version, List<TensorSpec> inputs,
                      InputFormat format, String tensor, long maxBytes, long timeoutMs) {

  public JobItem {
    inputs = List.copyOf(inputs);
  }
}
