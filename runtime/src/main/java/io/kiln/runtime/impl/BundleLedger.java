package io.kiln.runtime.impl;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.Allocation.GpuShare;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The ledger of one placement-group bundle: actors and tasks placed into the bundle reserve from what the
 * bundle holds, never from the node's free pool. GPU devices are the bundle's own: a bundle of whole GPUs is
 * a {@link ResourceLedger} over them (its device indices mapped back to the node's), a bundle holding a
 * fraction of one device hands out parts of that fraction on that device.
 *
 * <p>Allocations carry negative ids, unique on the node, so they never collide with the node ledger's.
 * Thread-safe.
 */
final class BundleLedger {

  private static final AtomicLong IDS = new AtomicLong();

  private final Resources total;
  private final ResourceLedger inner;
  private final List<Integer> devices;
  /** Fractional-GPU bundles only: the units of their one device still free. */
  private long fractionFree;
  private final Map<Long, Held> held = new HashMap<>();

  private record Held(Allocation inner, long fractionUnits) {
  }

  BundleLedger(Allocation reservation) {
    this.total = reservation.resources();
    this.devices = reservation.gpuIndices();
    long gpu = total.unitsOf(Resources.GPU);
    boolean whole = gpu % Resources.SCALE == 0;
    this.inner = new ResourceLedger(whole ? total : total.with(Resources.GPU, 0));
    this.fractionFree = whole ? 0 : gpu;
  }

  Resources total() {
    return total;
  }

  synchronized Resources available() {
    Resources a = inner.available();
    return fractionFree > 0 ? a.plus(Resources.ofUnits(Map.of(Resources.GPU, fractionFree))) : a;
  }

  /** Reserves {@code request} in the bundle; empty if it does not fit what is left. */
  synchronized Optional<Allocation> tryReserve(Resources request) {
    long gpu = request.unitsOf(Resources.GPU);
    boolean fractional = total.unitsOf(Resources.GPU) % Resources.SCALE != 0;
    if (fractional && gpu > fractionFree) {
      return Optional.empty();
    }
    Optional<Allocation> a = inner.tryReserve(fractional ? request.with(Resources.GPU, 0) : request);
    if (a.isEmpty()) {
      return Optional.empty();
    }
    List<GpuShare> shares = new ArrayList<>();
    if (fractional && gpu > 0) {
      shares.add(new GpuShare(devices.get(0), gpu / (double) Resources.SCALE));
      fractionFree -= gpu;
    } else {
      a.get().gpus().forEach(s -> shares.add(new GpuShare(devices.get(s.index()), s.fraction())));
    }
    Allocation out = new Allocation(-IDS.incrementAndGet(), request, shares);
    held.put(out.id(), new Held(a.get(), fractional ? gpu : 0));
    return Optional.of(out);
  }

  /** Returns an allocation to the bundle; false if it was not (or no longer) held here. */
  synchronized boolean release(Allocation allocation) {
    Held h = held.remove(allocation.id());
    if (h == null) {
      return false;
    }
    inner.release(h.inner());
    fractionFree += h.fractionUnits();
    return true;
  }
}
