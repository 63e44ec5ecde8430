package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.runtime.gpu.GpuSnapshot;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker's GPU meters against a real process standing in for nvidia-smi: its n-th answer reports GPU 0
 * with n*1000 MiB used, and pid 4242 with n*100 MiB.
 */
class WorkerGpuMetersTest {

  private static final double MIB = 1 << 20;
  private static final long SECOND = 1_000_000_000L;
  private static final Tags WORKER = Tags.of("deployment", "mlp", "version", "1", "node", "n1", "worker", "0");

  @TempDir
  Path dir;

  private final AtomicLong clock = new AtomicLong();
  private final MeterRegistry registry = new SimpleMeterRegistry();
  private GpuSampler sampler;

  @BeforeEach
  void sampler() throws IOException {
    Path counter = dir.resolve("count");
    Path smi = dir.resolve("nvidia-smi");
    Files.writeString(smi, "#!/bin/sh\nn=$(cat '" + counter + "' 2>/dev/null || echo 0)\n"
        + "case \"$1\" in --query-gpu=*) n=$((n+1)); echo $n > '" + counter + "'; echo \"0, $((n*1000)), 81920, 50\";;\n"
        + "  *) echo \"4242, GPU-a, $((n*100))\";; esac\n");
    Files.setPosixFilePermissions(smi, PosixFilePermissions.fromString("rwxr-xr-x"));
    sampler = new GpuSampler(new GpuSampler.Options(smi.toString(), Duration.ofSeconds(1), Duration.ofSeconds(10)),
        clock::get);
    sampler.sampleIfDue(); // 1000 MiB used before any load
  }

  @AfterEach
  void close() {
    sampler.close();
  }

  private void nextSample() {
    clock.addAndGet(SECOND);
    assertThat(sampler.sampleIfDue()).isTrue();
  }

  private Gauge memory(String method) {
    return registry.find(WorkerGpuMeters.MEMORY).tags(WORKER).tag("method", method).gauge();
  }

  @Test
  void anInJvmEngineGetsTheDevicesGrowthAcrossItsLoadFixedOnce() {
    GpuSnapshot before = sampler.latest();
    clock.addAndGet(SECOND / 2); // the load ends half a second later
    WorkerGpuMeters m = WorkerGpuMeters.register(registry, sampler, WORKER, "gpu(0)", OptionalLong.empty(), before,
        sampler.nanoTime());

    assertThat(registry.find(WorkerGpuMeters.DEVICE_INFO).tags(WORKER).tag("device", "gpu(0)").gauge().value())
        .isEqualTo(1);
    assertThat(memory("load_delta")).as("no sample since the load yet").isNull();

    nextSample(); // 2000 MiB
    assertThat(memory("load_delta").value()).isEqualTo(1000 * MIB);
    nextSample(); // 3000 MiB: someone else's allocation, not this worker's
    assertThat(memory("load_delta").value()).isEqualTo(1000 * MIB);
    assertThat(memory("load_delta").getId().getBaseUnit()).isEqualTo("bytes");

    m.close();
    assertThat(registry.find(WorkerGpuMeters.DEVICE_INFO).meters()).isEmpty();
    assertThat(registry.find(WorkerGpuMeters.MEMORY).meters()).isEmpty();
  }

  @Test
  void aWorkerWithItsOwnProcessShowsThatProcesssMemoryLive() {
    WorkerGpuMeters m = WorkerGpuMeters.register(registry, sampler, WORKER, "gpu(0)", OptionalLong.of(4242),
        sampler.latest(), sampler.nanoTime() + 1);

    nextSample();
    assertThat(memory("process").value()).isEqualTo(200 * MIB);
    nextSample();
    assertThat(memory("process").value()).isEqualTo(300 * MIB);
    m.close();
  }

  @Test
  void aCpuWorkerShowsOnlyItsDevice() {
    try (WorkerGpuMeters m = WorkerGpuMeters.register(registry, sampler, WORKER, "cpu()", OptionalLong.empty(),
        sampler.latest(), sampler.nanoTime())) {
      nextSample();
      assertThat(registry.find(WorkerGpuMeters.DEVICE_INFO).tag("device", "cpu()").gauge()).isNotNull();
      assertThat(registry.find(WorkerGpuMeters.MEMORY).meters()).isEmpty();
    }
  }

  @Test
  void aWorkerClosedBeforeTheNextSampleLeavesNoMeterBehind() {
    WorkerGpuMeters m = WorkerGpuMeters.register(registry, sampler, WORKER, "gpu(0)", OptionalLong.empty(),
        sampler.latest(), sampler.nanoTime() + 1);
    m.close();
    nextSample();
    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void closingAnOldIncarnationLeavesTheNewOnesMeters() {
    WorkerGpuMeters old = WorkerGpuMeters.register(registry, sampler, WORKER, "gpu(0)", OptionalLong.of(1),
        sampler.latest(), sampler.nanoTime() + 1);
    nextSample();
    WorkerGpuMeters restarted = WorkerGpuMeters.register(registry, sampler, WORKER, "gpu(0)", OptionalLong.of(4242),
        sampler.latest(), sampler.nanoTime() + 1);
    nextSample();

    old.close();

    assertThat(registry.find(WorkerGpuMeters.DEVICE_INFO).gauge()).isNotNull();
    assertThat(memory("process").value()).as("the new process's, not the old one's").isEqualTo(300 * MIB);
    restarted.close();
    assertThat(registry.getMeters()).isEmpty();
  }
}
