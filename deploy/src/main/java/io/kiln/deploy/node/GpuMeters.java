package io.kiln.deploy.node;

import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.runtime.gpu.GpuSnapshot;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * A node's device meters, read from its {@link GpuSampler}'s latest snapshot (a scrape never runs the tool
 * nor waits for it), base units, tagged {@code gpu} (the index) and {@code node}:
 * {@code kiln.gpu.memory.used} and {@code kiln.gpu.memory.total} (bytes), {@code kiln.gpu.utilization}
 * (ratio 0..1), NaN before the first sample and where the tool reports {@code [N/A]};
 * {@code kiln.gpu.samples.failed} (counter, tag {@code query} = {@code gpu} | {@code compute-apps}).
 */
final class GpuMeters implements AutoCloseable {

  private final MeterRegistry registry;
  private final List<Meter> meters = new ArrayList<>();

  private GpuMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  static GpuMeters register(MeterRegistry registry, GpuSampler sampler, List<Integer> devices, String nodeId) {
    GpuMeters m = new GpuMeters(registry);
    for (int index : devices) {
      Tags tags = Tags.of("gpu", Integer.toString(index), "node", nodeId);
      m.gauge("kiln.gpu.memory.used", "Device memory in use (nvidia-smi memory.used)", "bytes", tags, sampler, index,
          GpuSnapshot.DeviceSample::memoryUsedBytes);
      m.gauge("kiln.gpu.memory.total", "Device memory in all (nvidia-smi memory.total)", "bytes", tags, sampler,
          index, GpuSnapshot.DeviceSample::memoryTotalBytes);
      m.gauge("kiln.gpu.utilization", "Fraction of the driver's last sample period a kernel ran (nvidia-smi"
          + " utilization.gpu / 100)", "ratio", tags, sampler, index, GpuSnapshot.DeviceSample::utilization);
    }
    for (GpuSampler.Query q : GpuSampler.Query.values()) {
      m.meters.add(FunctionCounter.builder("kiln.gpu.samples.failed", sampler, s -> s.failures(q))
          .description("GPU samples whose nvidia-smi query failed, hung or did not parse (the last good one is kept)")
          .tags("query", q.tag, "node", nodeId).register(registry));
    }
    return m;
  }

  private void gauge(String name, String help, String unit, Tags tags, GpuSampler sampler, int index,
                     ToDoubleFunction<GpuSnapshot.DeviceSample> field) {
    meters.add(Gauge.builder(name, sampler, s -> s.latest().device(index).map(field::applyAsDouble).orElse(Double.NaN))
        .description(help).baseUnit(unit).tags(tags).strongReference(true).register(registry));
  }

  /** Removes the meters; idempotent. */
  @Override
  public void close() {
    meters.forEach(registry::remove);
    meters.clear();
  }
}
