package io.kiln.runtime.gpu;

import java.util.Objects;

/**
 * One GPU as the driver reports it.
 *
 * @param index the device index CUDA numbers it by (what {@code CUDA_VISIBLE_DEVICES} and DJL's
 *     {@code Device.gpu(i)} take)
 * @param name the product name, e.g. {@code NVIDIA H200}
 * @param memoryBytes total device memory
 * @param uuid the driver's stable id ({@code GPU-...}), empty if not reported
 */
public record GpuDevice(int index, String name, long memoryBytes, String uuid) {

  public GpuDevice {
    Objects.requireNonNull(name, "name");
    uuid = uuid == null ? "" : uuid;
    if (index < 0) {
      throw new IllegalArgumentException("index must be >= 0, got " + index);
    }
    if (memoryBytes < 0) {
      throw new IllegalArgumentException("memoryBytes must be >= 0, got " + memoryBytes);
    }
  }
}
