package io.kiln.runtime.gpu;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The GPUs found on a node, and the driver that runs them.
 *
 * @param devices by index, possibly empty
 * @param driverVersion e.g. {@code 570.124.06}; empty without GPUs
 * @param cudaVersion the highest CUDA version the driver supports, e.g. {@code 12.8}; empty if unknown
 * @param source how they were found, for logs and {@code kiln status} (e.g. {@code nvidia-smi}, or why none)
 */
public record GpuInventory(List<GpuDevice> devices, String driverVersion, String cudaVersion, String source) {

  public GpuInventory {
    devices = List.copyOf(devices);
    driverVersion = Objects.requireNonNullElse(driverVersion, "");
    cudaVersion = Objects.requireNonNullElse(cudaVersion, "");
    Objects.requireNonNull(source, "source");
  }

  /** No GPUs, and why. */
  public static GpuInventory none(String why) {
    return new GpuInventory(List.of(), "", "", why);
  }

  public int count() {
    return devices.size();
  }

  /**
   * Node labels describing the GPUs, for node selectors and {@code kiln status}: {@code accelerator} (the
   * product name with spaces as dashes, e.g. {@code NVIDIA-H200}; {@code mixed} when the devices differ),
   * {@code gpu_memory_gib} (the smallest device's memory in whole GiB, rounded down, so a selector never
   * promises more than every device has), {@code gpu_driver} and {@code cuda_version}. None without GPUs.
   */
  public Map<String, String> labels() {
    Map<String, String> labels = new LinkedHashMap<>();
    if (devices.isEmpty()) {
      return labels;
    }
    String first = devices.get(0).name();
    boolean same = devices.stream().allMatch(d -> d.name().equals(first));
    labels.put("accelerator", same ? first.trim().replaceAll("\\s+", "-") : "mixed");
    long smallest = devices.stream().mapToLong(GpuDevice::memoryBytes).min().orElse(0);
    labels.put("gpu_memory_gib", Long.toString(smallest >> 30));
    if (!driverVersion.isEmpty()) {
      labels.put("gpu_driver", driverVersion);
    }
    if (!cudaVersion.isEmpty()) {
      labels.put("cuda_version", cudaVersion);
    }
    return labels;
  }

  /** One line for logs, e.g. {@code 8 x NVIDIA H200 (140 GiB), driver 570.124.06, CUDA 12.8}. */
  public String describe() {
    if (devices.isEmpty()) {
      return "no GPUs (" + source + ")";
    }
    return String.format(Locale.ROOT, "%d x %s (%d GiB), driver %s, CUDA %s, from %s", devices.size(),
        labels().get("accelerator"), devices.get(0).memoryBytes() >> 30, driverVersion,
        cudaVersion.isEmpty() ? "?" : cudaVersion, source);
  }
}
