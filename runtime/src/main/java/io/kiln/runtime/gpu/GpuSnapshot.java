package io.kiln.runtime.gpu;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * What {@code nvidia-smi} last said about a node's GPUs and the processes using them: one {@link GpuSampler}
 * sample. Immutable; a sampler replaces its snapshot whole.
 *
 * <p>A value the tool reports as {@code [N/A]} or another bracketed word (utilisation on a MIG-partitioned card, a process's memory
 * where the driver will not tell) is {@code NaN} here, never 0.
 *
 * @param sampledAtNanos when the sample started, on its sampler's clock ({@link GpuSampler#nanoTime()});
 *     {@link Long#MIN_VALUE} for {@link #NONE}
 * @param devices one per GPU, by index
 * @param processes the compute processes on the GPUs; the last good answer of that query, which may be older
 *     than the devices' when only that query failed since
 * @param processesKnown whether the processes query has answered at all (if not, a process's memory is unknown,
 *     not 0)
 */
public record GpuSnapshot(long sampledAtNanos, List<DeviceSample> devices, List<ProcessSample> processes,
                          boolean processesKnown) {

  /** Before the first good sample. */
  public static final GpuSnapshot NONE = new GpuSnapshot(Long.MIN_VALUE, List.of(), List.of(), false);

  /** The fields of the devices query, in this order. */
  public static final String DEVICE_QUERY = "index,memory.used,memory.total,utilization.gpu";
  /** The fields of the processes query ({@code --query-compute-apps}), in this order. */
  public static final String PROCESS_QUERY = "pid,gpu_uuid,used_memory";

  public GpuSnapshot {
    devices = List.copyOf(devices);
    processes = List.copyOf(processes);
  }

  /**
   * One GPU's state.
   *
   * @param memoryUsedBytes NaN when not reported
   * @param memoryTotalBytes NaN when not reported
   * @param utilization the fraction of the last sample period a kernel ran, 0..1; NaN when not reported
   */
  public record DeviceSample(int index, double memoryUsedBytes, double memoryTotalBytes, double utilization) {
  }

  /**
   * One compute process on one GPU (a process on two GPUs has two).
   *
   * @param pid as the driver sees it: the host's pid namespace, so inside a container it may not match
   * @param gpuUuid the device's {@code GPU-...} id
   * @param usedMemoryBytes NaN when not reported
   */
  public record ProcessSample(long pid, String gpuUuid, double usedMemoryBytes) {
  }

  /** Whether this is a real sample (not {@link #NONE}). */
  public boolean sampled() {
    return sampledAtNanos != Long.MIN_VALUE;
  }

  public Optional<DeviceSample> device(int index) {
    for (DeviceSample d : devices) {
      if (d.index() == index) {
        return Optional.of(d);
      }
    }
    return Optional.empty();
  }

  /**
   * The device memory process {@code pid} uses on all GPUs together: 0 when the processes query answered
   * without it (it holds no device memory), NaN when that query never answered or the driver reports none of
   * its amounts.
   */
  public double processMemoryBytes(long pid) {
    if (!processesKnown) {
      return Double.NaN;
    }
    double sum = 0;
    boolean listed = false;
    boolean known = false;
    for (ProcessSample p : processes) {
      if (p.pid() == pid) {
        listed = true;
        if (!Double.isNaN(p.usedMemoryBytes())) {
          known = true;
          sum += p.usedMemoryBytes();
        }
      }
    }
    return listed && !known ? Double.NaN : sum;
  }

  /**
   * Parses {@code nvidia-smi --query-gpu=}{@value #DEVICE_QUERY}{@code --format=csv,noheader,nounits}: one
   * device a line, memory in MiB, utilisation in percent.
   *
   * @throws GpuDiscoveryException naming the line that does not parse
   */
  public static List<DeviceSample> parseDevices(String csv) {
    List<DeviceSample> out = new ArrayList<>();
    int lineNo = 0;
    for (String line : csv.split("\\R")) {
      lineNo++;
      if (line.isBlank()) {
        continue;
      }
      String[] f = fields(line, 4, DEVICE_QUERY, lineNo);
      try {
        int index = Integer.parseInt(f[0]);
        out.add(new DeviceSample(index, mib(f[1]), mib(f[2]), percent(f[3])));
      } catch (NumberFormatException e) {
        throw unparsable(line, lineNo, e);
      }
    }
    out.sort(Comparator.comparingInt(DeviceSample::index));
    return out;
  }

  /**
   * Parses {@code nvidia-smi --query-compute-apps=}{@value #PROCESS_QUERY}{@code --format=csv,noheader,nounits}:
   * one process and GPU a line, memory in MiB; no lines (or the tool's "No running processes found") when
   * there are none.
   *
   * @throws GpuDiscoveryException naming the line that does not parse
   */
  public static List<ProcessSample> parseProcesses(String csv) {
    List<ProcessSample> out = new ArrayList<>();
    int lineNo = 0;
    for (String line : csv.split("\\R")) {
      lineNo++;
      if (line.isBlank() || line.strip().startsWith("No running processes")) {
        continue;
      }
      String[] f = fields(line, 3, PROCESS_QUERY, lineNo);
      try {
        out.add(new ProcessSample(Long.parseLong(f[0]), f[1], mib(f[2])));
      } catch (NumberFormatException e) {
        throw unparsable(line, lineNo, e);
      }
    }
    return out;
  }

  private static String[] fields(String line, int expected, String query, int lineNo) {
    String[] f = line.split(",", -1);
    if (f.length != expected) {
      throw new GpuDiscoveryException("nvidia-smi line " + lineNo + " has " + f.length + " fields, expected "
          + expected + " (" + query + "): '" + line.strip() + "'");
    }
    for (int i = 0; i < f.length; i++) {
      f[i] = f[i].strip();
    }
    return f;
  }

  private static GpuDiscoveryException unparsable(String line, int lineNo, NumberFormatException e) {
    return new GpuDiscoveryException("nvidia-smi line " + lineNo + " does not parse (" + e.getMessage() + "): '"
        + line.strip() + "'", e);
  }

  // [N/A], [Not Supported], [Insufficient Permissions]: the tool's ways of saying it will not tell.
  private static boolean unknown(String field) {
    return SmiProcess.notAvailable(field) || field.startsWith("[") && field.endsWith("]");
  }

  private static double mib(String field) {
    return unknown(field) ? Double.NaN : Long.parseLong(field) * (double) (1L << 20);
  }

  private static double percent(String field) {
    return unknown(field) ? Double.NaN : Double.parseDouble(field) / 100.0;
  }
}
