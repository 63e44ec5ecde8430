package io.kiln.deploy.node;

import io.kiln.runtime.gpu.GpuSampler;
import java.util.List;
import java.util.Objects;

/**
 * That a node samples its GPUs for {@code /metrics}, and how: only for GPUs {@code nvidia-smi} found
 * ({@code --gpus auto}); a node with declared or no GPUs has none of this.
 *
 * @param devices the indices of the GPUs found at start, one set of {@code kiln.gpu.*} gauges each
 * @param sampler the {@code nvidia-smi} to run (the one that found them) and how often
 */
public record GpuSampling(List<Integer> devices, GpuSampler.Options sampler) {

  public GpuSampling {
    devices = List.copyOf(devices);
    Objects.requireNonNull(sampler, "sampler");
    if (devices.isEmpty()) {
      throw new IllegalArgumentException("GPU sampling needs at least one device found");
    }
  }
}
