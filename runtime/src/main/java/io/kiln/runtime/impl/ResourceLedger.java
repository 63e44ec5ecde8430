package io.kiln.runtime.impl;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.Allocation.GpuShare;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The authoritative ledger of one node's resources: what is reserved, by whom, and on which GPU devices.
 * The cluster's node table is only a copy of what this ledger says; when the two disagree the ledger
 * wins, and a refused reservation makes the caller spill back to its next candidate node.
 *
 * <p>GPU rules. The node has {@code n} whole devices, indices {@code 0..n-1}. A whole request of
 * {@code k} GPUs takes {@code k} distinct, entirely free devices (lowest indices first). A fractional
 * request takes one device with at least that fraction free, choosing the most used device that still
 * fits (best fit), so fractions fill one device before opening another. Shares are counted in the
 * fixed-point units of {@link Resources#SCALE}, so ten {@code GPU: 0.1} exactly fill a device. A request
 * is refused when fragmentation prevents it even though the summed free GPU would fit.
 *
 * <p>Thread-safe; every method is short and non-blocking apart from an uncontended monitor.
 */
public final class ResourceLedger {

  /** A sanity bound on declared devices, so a typo cannot allocate a huge device table. */
  public static final int MAX_GPUS = 1024;

  private final Resources total;
  private final long[] gpuUsedUnits;
  private final Map<Long, Held> held = new HashMap<>();
  private Resources available;
  private long nextId = 1;

  /**
   * @throws IllegalArgumentException if the GPU total is not whole or exceeds {@link #MAX_GPUS}
   */
  public ResourceLedger(Resources total) {
    this.total = Objects.requireNonNull(total, "total");
    long gpuUnits = total.unitsOf(Resources.GPU);
    if (gpuUnits % Resources.SCALE != 0) {
      throw new IllegalArgumentException("a node's GPU total must be whole, got " + total.get(Resources.GPU));
    }
    long devices = gpuUnits / Resources.SCALE;
    if (devices > MAX_GPUS) {
      throw new IllegalArgumentException("a node may declare at most " + MAX_GPUS + " GPUs, got " + devices);
    }
    this.gpuUsedUnits = new long[(int) devices];
    this.available = total;
  }

  public Resources total() {
    return total;
  }

  public synchronized Resources available() {
    return available;
  }

  /**
   * Reserves {@code request} if it fits now, choosing GPU devices by the rules above.
   *
   * @return the allocation, or empty if any quantity is short or GPU fragmentation prevents it
   */
  public synchronized Optional<Allocation> tryReserve(Resources request) {
    Objects.requireNonNull(request, "request");
    if (!request.fitsIn(available)) {
      return Optional.empty();
    }
    long gpu = request.unitsOf(Resources.GPU);
    int[] devices;
    if (gpu == 0) {
      devices = new int[0];
    } else if (gpu % Resources.SCALE == 0) {
      devices = freeDevices((int) (gpu / Resources.SCALE));
    } else {
      devices = bestFit(gpu);
    }
    if (devices == null) {
      return Optional.empty();
    }
    long perDevice = gpu % Resources.SCALE == 0 ? Resources.SCALE : gpu;
    List<GpuShare> shares = new ArrayList<>(devices.length);
    for (int d : devices) {
      gpuUsedUnits[d] += perDevice;
      shares.add(new GpuShare(d, perDevice / (double) Resources.SCALE));
    }
    available = available.minus(request);
    Allocation allocation = new Allocation(nextId++, request, shares);
    held.put(allocation.id(), new Held(allocation, devices, perDevice));
    return Optional.of(allocation);
  }

  /**
   * Returns an allocation's resources to the node. Idempotent.
   *
   * @return true if this call released it; false if it was already released or not issued here
   */
  public synchronized boolean release(Allocation allocation) {
    Objects.requireNonNull(allocation, "allocation");
    Held h = held.get(allocation.id());
    if (h == null || !h.allocation.equals(allocation)) {
      return false;
    }
    held.remove(allocation.id());
    for (int d : h.devices) {
      gpuUsedUnits[d] -= h.unitsPerDevice;
    }
    available = available.plus(allocation.resources());
    return true;
  }

  /** The {@code k} lowest-indexed entirely free devices, or null if fewer are free. */
  private int[] freeDevices(int k) {
    int[] chosen = new int[k];
    int found = 0;
    for (int d = 0; d < gpuUsedUnits.length && found < k; d++) {
      if (gpuUsedUnits[d] == 0) {
        chosen[found++] = d;
      }
    }
    return found == k ? chosen : null;
  }

  /** The most used device that still has {@code units} free (lowest index on ties), or null. */
  private int[] bestFit(long units) {
    int best = -1;
    for (int d = 0; d < gpuUsedUnits.length; d++) {
      if (gpuUsedUnits[d] + units <= Resources.SCALE && (best < 0 || gpuUsedUnits[d] > gpuUsedUnits[best])) {
        best = d;
      }
    }
    return best < 0 ? null : new int[] {best};
  }

  private record Held(Allocation allocation, int[] devices, long unitsPerDevice) {}
}
