package io.kiln.runtime;

import java.util.List;
import java.util.Objects;

/**
 * Resources a node's ledger has reserved for one actor or task, held until its death. An actor reads
 * {@link #gpuIndices()} to pick its devices (e.g. {@code CUDA_VISIBLE_DEVICES}). Immutable.
 *
 * @param id identifier unique within the ledger that issued it
 * @param resources the quantities reserved, exactly as requested
 * @param gpus the GPU devices backing the request's {@code GPU} quantity: one share of 1.0 per device for
 *     a whole request, a single fractional share for a fraction, empty when no GPU was asked for
 */
public record Allocation(long id, Resources resources, List<GpuShare> gpus) {

  public Allocation {
    Objects.requireNonNull(resources, "resources");
    gpus = List.copyOf(gpus);
  }

  /** Device indices of {@link #gpus()}, in the same order. */
  public List<Integer> gpuIndices() {
    return gpus.stream().map(GpuShare::index).toList();
  }

  /**
   * A share of one GPU device.
   *
   * @param index device index on the node, 0..n-1
   * @param fraction the part of the device held, in (0, 1]
   */
  public record GpuShare(int index, double fraction) {
    public GpuShare {
      if (index < 0) {
        throw new IllegalArgumentException("GPU index must be >= 0, got " + index);
      }
      if (!(fraction > 0 && fraction <= 1)) {
        throw new IllegalArgumentException("GPU share must be in (0, 1], got " + fraction);
      }
    }
  }
}
