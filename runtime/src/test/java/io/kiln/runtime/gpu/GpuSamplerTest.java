package io.kiln.runtime.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.gpu.GpuSampler.Query;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sampler against real processes standing in for nvidia-smi: a script whose answers change with every
 * devices query (a counter file) and that records each invocation, so the rate bound is counted, not timed.
 */
@Tag("slow")
class GpuSamplerTest {

  private static final double MIB = 1 << 20;
  private static final long SECOND = 1_000_000_000L;

  @TempDir
  Path dir;

  private final AtomicLong clock = new AtomicLong(); // nanos; moved by hand

  /**
   * nvidia-smi whose n-th devices query reports n*1000 MiB used and n*10 % utilisation on GPU 0, and whose
   * processes query reports pid 4242 with n*100 MiB; {@code devicesFrom}: a shell snippet run for devices
   * queries after the n-th (n in $n), e.g. to fail or hang from then on.
   */
  private Path countingSmi(String devicesFrom, String processes) throws IOException {
    String counter = dir.resolve("count").toString();
    return script("nvidia-smi", "echo \"$1\" >> '" + dir.resolve("calls") + "'\n"
        + "n=$(cat '" + counter + "' 2>/dev/null || echo 0)\n"
        + "case \"$1\" in\n"
        + "  --query-gpu=" + GpuSnapshot.DEVICE_QUERY + ") n=$((n+1)); echo $n > '" + counter + "'\n"
        + "    " + devicesFrom + "\n"
        + "    echo \"0, $((n*1000)), 143771, $((n*10))\"; echo '1, 0, 143771, 0';;\n"
        + "  --query-compute-apps=" + GpuSnapshot.PROCESS_QUERY + ") " + processes + "\n"
        + "    echo \"4242, GPU-a, $((n*100))\";;\n"
        + "  *) echo \"unexpected $*\"; exit 2;;\n"
        + "esac");
  }

  private GpuSampler sampler(Path smi, Duration period, Duration timeout) {
    return new GpuSampler(new GpuSampler.Options(smi.toString(), period, timeout), clock::get);
  }

  private List<String> calls() throws IOException {
    Path calls = dir.resolve("calls");
    return Files.exists(calls) ? Files.readAllLines(calls) : List.of();
  }

  @Test
  void samplesFollowTheToolAndNeverComeFasterThanThePeriod() throws IOException {
    try (GpuSampler s = sampler(countingSmi("", ""), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      assertThat(s.latest()).isSameAs(GpuSnapshot.NONE);

      assertThat(s.sampleIfDue()).isTrue();
      GpuSnapshot first = s.latest();
      assertThat(first.sampledAtNanos()).isZero();
      assertThat(first.device(0).orElseThrow().memoryUsedBytes()).isEqualTo(1000 * MIB);
      assertThat(first.device(0).orElseThrow().utilization()).isEqualTo(0.10);
      assertThat(first.device(1)).isPresent();
      assertThat(first.processMemoryBytes(4242)).isEqualTo(100 * MIB);

      clock.set(9 * SECOND + 999_999_999L);
      assertThat(s.sampleIfDue()).as("within the period").isFalse();
      assertThat(s.latest()).isSameAs(first);

      clock.set(10 * SECOND);
      assertThat(s.sampleIfDue()).isTrue();
      assertThat(s.latest().device(0).orElseThrow().memoryUsedBytes()).isEqualTo(2000 * MIB);
      assertThat(s.latest().processMemoryBytes(4242)).isEqualTo(200 * MIB);

      assertThat(calls()).containsExactly("--query-gpu=" + GpuSnapshot.DEVICE_QUERY,
          "--query-compute-apps=" + GpuSnapshot.PROCESS_QUERY, "--query-gpu=" + GpuSnapshot.DEVICE_QUERY,
          "--query-compute-apps=" + GpuSnapshot.PROCESS_QUERY);
      assertThat(s.failures(Query.DEVICES) + s.failures(Query.PROCESSES)).isZero();
    }
  }

  @Test
  void startedItSamplesOnItsOwnThreadAtMostOncePerPeriod() throws IOException {
    Path smi = countingSmi("", "");
    long started = System.nanoTime();
    try (GpuSampler s = new GpuSampler(new GpuSampler.Options(smi.toString(), GpuSampler.Options.MIN_PERIOD,
        Duration.ofSeconds(10)))) {
      s.start();
      s.start(); // idempotent: still one thread

      await().atMost(Duration.ofSeconds(30)).until(() -> s.latest().device(0)
          .map(d -> d.memoryUsedBytes() >= 3000 * MIB).orElse(false));
      long devicesQueries = calls().stream().filter(c -> c.startsWith("--query-gpu")).count();
      long elapsedSeconds = (System.nanoTime() - started) / SECOND;
      // A sample at once, then at most one per second since.
      assertThat(devicesQueries).isGreaterThanOrEqualTo(3).isLessThanOrEqualTo(elapsedSeconds + 1);
    }
  }

  @Test
  void aFailingToolKeepsTheLastGoodSampleAndCountsFailures() throws IOException {
    Path smi = countingSmi("if [ $n -ge 2 ] && [ ! -e '" + dir.resolve("healed") + "' ]; then"
        + " echo 'NVIDIA-SMI has failed because it couldn'\\''t communicate with the NVIDIA driver.'; exit 9; fi", "");
    try (GpuSampler s = sampler(smi, Duration.ofSeconds(1), Duration.ofSeconds(10))) {
      s.sampleIfDue();
      GpuSnapshot good = s.latest();

      for (int i = 1; i <= 3; i++) {
        clock.set(i * SECOND);
        assertThat(s.sampleIfDue()).isTrue();
      }

      assertThat(s.latest()).isSameAs(good);
      assertThat(s.failures(Query.DEVICES)).isEqualTo(3);
      assertThat(calls()).filteredOn(c -> c.startsWith("--query-compute-apps")).as("skipped while devices fail")
          .hasSize(1);

      Files.createFile(dir.resolve("healed"));
      clock.set(4 * SECOND);
      s.sampleIfDue();
      assertThat(s.latest().device(0).orElseThrow().memoryUsedBytes()).isEqualTo(5000 * MIB);
      assertThat(s.failures(Query.DEVICES)).isEqualTo(3);
    }
  }

  @Test
  void aHangingToolIsKilledAtItsTimeoutAndTheSampleKept() throws IOException {
    try (GpuSampler s = sampler(countingSmi("if [ $n -ge 2 ]; then exec sleep 60; fi", ""), Duration.ofSeconds(1),
        Duration.ofSeconds(3))) {
      s.sampleIfDue();
      GpuSnapshot good = s.latest();
      clock.set(SECOND);
      long before = System.nanoTime();

      assertThat(s.sampleIfDue()).isTrue();

      assertThat(System.nanoTime() - before).isLessThan(30 * SECOND);
      assertThat(s.latest()).isSameAs(good);
      assertThat(s.failures(Query.DEVICES)).isEqualTo(1);
    }
  }

  @Test
  void aFailingProcessesQueryUpdatesTheDevicesAndKeepsTheLastProcesses() throws IOException {
    Path smi = countingSmi("", "if [ $n -ge 2 ]; then echo 'Failed to get process list'; exit 3; fi");
    try (GpuSampler s = sampler(smi, Duration.ofSeconds(1), Duration.ofSeconds(10))) {
      s.sampleIfDue();
      clock.set(SECOND);
      s.sampleIfDue();

      assertThat(s.latest().device(0).orElseThrow().memoryUsedBytes()).isEqualTo(2000 * MIB);
      assertThat(s.latest().processMemoryBytes(4242)).isEqualTo(100 * MIB);
      assertThat(s.failures(Query.PROCESSES)).isEqualTo(1);
      assertThat(s.failures(Query.DEVICES)).isZero();
    }
  }

  @Test
  void aMissingToolIsAFailedSampleNotAnError() {
    try (GpuSampler s = sampler(dir.resolve("no-such-smi"), Duration.ofSeconds(1), Duration.ofSeconds(1))) {
      assertThat(s.sampleIfDue()).isTrue();
      assertThat(s.latest().sampled()).isFalse();
      assertThat(s.failures(Query.DEVICES)).isEqualTo(1);
    }
  }

  @Test
  void firstSampleFromWaitsForALaterSampleAndIsCancelledOnClose() throws IOException {
    GpuSampler s = sampler(countingSmi("", ""), Duration.ofSeconds(1), Duration.ofSeconds(10));
    s.sampleIfDue();
    assertThat(s.firstSampleFrom(0).toCompletableFuture()).isCompletedWithValue(s.latest());

    CompletableFuture<GpuSnapshot> later = s.firstSampleFrom(1).toCompletableFuture();
    CompletableFuture<GpuSnapshot> never = s.firstSampleFrom(5 * SECOND).toCompletableFuture();
    assertThat(later).isNotDone();
    clock.set(2 * SECOND);
    s.sampleIfDue();
    assertThat(later).isCompletedWithValue(s.latest());
    assertThat(later.join().device(0).orElseThrow().memoryUsedBytes()).isEqualTo(2000 * MIB);

    s.close();
    assertThat(never).isCancelled();
    assertThat(s.firstSampleFrom(10 * SECOND).toCompletableFuture()).isCancelled();
    clock.set(10 * SECOND);
    assertThat(s.sampleIfDue()).as("closed").isFalse();
  }

  @Test
  void periodsUnderASecondAreRefused() {
    assertThatThrownBy(() -> GpuSampler.Options.of("nvidia-smi").withPeriod(Duration.ofMillis(999)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1 s");
    assertThat(GpuSampler.Options.of("nvidia-smi").period()).isEqualTo(Duration.ofSeconds(10));
  }

  private Path script(String name, String body) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    return p;
  }
}
