package io.kiln.serve;

import io.kiln.serve.impl.Rules;
import java.util.List;

/**
 * The batches a worker runs once after loading its model and before it reports ready, so that the first
 * real requests do not pay for lazy initialisation (kernel selection, allocator growth).
 *
 * @param batchSizes batch sizes to run, in order, each at least 1 (and, within a deployment, at most
 *     {@code batching.max_batch_size}); may be empty to skip warm-up
 */
public record WarmupSpec(List<Integer> batchSizes) {

  public static final List<Integer> DEFAULT_BATCH_SIZES = List.of(1);
  public static final WarmupSpec DEFAULT = new WarmupSpec(DEFAULT_BATCH_SIZES);

  public WarmupSpec {
    batchSizes = List.copyOf(batchSizes);
    for (int i = 0; i < batchSizes.size(); i++) {
      Rules.require("batch_sizes[" + i + "]", Rules.atLeast(batchSizes.get(i), 1));
    }
  }
}
