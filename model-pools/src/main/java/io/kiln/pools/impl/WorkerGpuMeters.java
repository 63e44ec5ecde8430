package io.kiln.pools.impl;

import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.runtime.gpu.GpuSnapshot;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One worker's GPU meters, on nodes that sample their GPUs (a {@link GpuSampler} local service):
 *
 * <ul>
 *   <li>{@value #DEVICE_INFO} {@code {deployment, version, node, worker, device}} = 1, {@code device} as
 *       {@link io.kiln.pools.ModelLoadInfo#device()} spells it ({@code gpu(0)}, {@code cpu()}), from the load
 *       until the worker closes;
 *   <li>{@value #MEMORY} (bytes) {@code {..., device, method}} for a worker on a GPU, once the first sample
 *       after its load is in: {@code method="process"} for a worker with a process of its own (Python): that
 *       process's device memory, live from each sample's compute apps; {@code method="load_delta"} for engines
 *       in the node's JVM (PyTorch, ONNX Runtime), which share one pid: an estimate, the device's used memory
 *       after the load minus before it, fixed once (other loads on that device at the same time count too).
 * </ul>
 *
 * <p>A restarted worker's new incarnation may load while the old one still finishes a call: the newer
 * registration replaces the older's meters (same tags), and closing the older leaves the newer's alone.
 */
public final class WorkerGpuMeters implements AutoCloseable {

  public static final String DEVICE_INFO = "kiln.pool.worker.device.info";
  public static final String MEMORY = "kiln.pool.worker.gpu.memory";
  private static final Pattern GPU = Pattern.compile("gpu\\((\\d+)\\)");
  private static final String MEMORY_HELP = "Device memory of the worker's model. method=process: its own"
      + " process's use (nvidia-smi compute apps, by pid). method=load_delta: an estimate for engines sharing the"
      + " node's JVM process, the device's used memory after the load minus before it (loads at the same time"
      + " on that device count too)";

  private final MeterRegistry registry;
  private final List<Meter> meters = new ArrayList<>(); // guarded by registry
  private boolean closed; // guarded by registry

  private WorkerGpuMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  /**
   * Registers the worker's device gauge, and arranges its memory gauge for when a sample after the load
   * comes in. Never blocks.
   *
   * @param workerTags deployment, version, node and worker
   * @param device where the model loaded ({@code gpu(i)} or {@code cpu()})
   * @param ownProcess the pid of the worker's own model process, if it has one
   * @param before the sampler's snapshot taken when the load started
   * @param loadedAtNanos when the load (warm-up included) ended, on the sampler's clock
   */
  public static WorkerGpuMeters register(MeterRegistry registry, GpuSampler sampler, Tags workerTags, String device,
                                         OptionalLong ownProcess, GpuSnapshot before, long loadedAtNanos) {
    WorkerGpuMeters m = new WorkerGpuMeters(registry);
    Tags tags = workerTags.and("device", device);
    m.add(DEVICE_INFO, tags, Gauge.builder(DEVICE_INFO, () -> 1)
        .description("The device each worker's model runs on (value 1)").tags(tags).strongReference(true));
    Matcher gpu = GPU.matcher(device);
    if (!gpu.matches()) {
      return m;
    }
    int index = Integer.parseInt(gpu.group(1));
    sampler.firstSampleFrom(loadedAtNanos).thenAccept(after -> {
      if (ownProcess.isPresent()) {
        long pid = ownProcess.getAsLong();
        Tags process = tags.and("method", "process");
        m.add(MEMORY, process, Gauge.builder(MEMORY, sampler, s -> s.latest().processMemoryBytes(pid))
            .description(MEMORY_HELP).baseUnit("bytes").tags(process).strongReference(true));
      } else {
        double grown = used(after, index) - used(before, index);
        if (!Double.isNaN(grown)) {
          double estimate = Math.max(0, grown);
          Tags delta = tags.and("method", "load_delta");
          m.add(MEMORY, delta, Gauge.builder(MEMORY, () -> estimate).description(MEMORY_HELP).baseUnit("bytes")
              .tags(delta).strongReference(true));
        }
      }
    });
    return m;
  }

  private static double used(GpuSnapshot s, int index) {
    return s.device(index).map(GpuSnapshot.DeviceSample::memoryUsedBytes).orElse(Double.NaN);
  }

  private void add(String name, Tags tags, Gauge.Builder<?> builder) {
    synchronized (registry) {
      if (closed) {
        return;
      }
      // Another incarnation's meter with these tags: replace it, so that the gauge reads this worker's state.
      Meter stale = registry.find(name).tags(tags).meter();
      if (stale != null) {
        registry.remove(stale);
      }
      meters.add(builder.register(registry));
    }
  }

  /** Removes this worker's meters, unless a newer incarnation re-registered them; idempotent. */
  @Override
  public void close() {
    synchronized (registry) {
      closed = true;
      for (Meter mine : meters) {
        // By identity: meters are equal by id, and a newer incarnation's has the same id.
        if (registry.find(mine.getId().getName()).tags(mine.getId().getTags()).meters().stream()
            .anyMatch(m -> m == mine)) {
          registry.remove(mine);
        }
      }
      meters.clear();
    }
  }
}
