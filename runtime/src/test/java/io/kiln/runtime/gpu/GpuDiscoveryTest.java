package io.kiln.runtime.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Parsing recorded nvidia-smi output, and running real processes in its place. */
class GpuDiscoveryTest {

  @TempDir
  Path dir;

  private static String fixture(String name) throws IOException {
    try (InputStream in = GpuDiscoveryTest.class.getResourceAsStream("/gpu/" + name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void anH200IsOneDeviceWithItsMemoryAndLabels() throws IOException {
    GpuDiscovery.Query q = GpuDiscovery.parseQuery(fixture("h200.csv"));
    GpuInventory inv = new GpuInventory(q.devices(), q.driverVersion(),
        GpuDiscovery.parseCudaVersion(fixture("banner.txt")).orElseThrow(), "fixture");

    assertThat(inv.devices()).containsExactly(
        new GpuDevice(0, "NVIDIA H200", 143771L << 20, "GPU-5d4e2c7a-8f3b-4e1a-9c6d-2b7f0e1a3c45"));
    assertThat(inv.labels()).containsExactly(
        java.util.Map.entry("accelerator", "NVIDIA-H200"), java.util.Map.entry("gpu_memory_gib", "140"),
        java.util.Map.entry("gpu_driver", "570.124.06"), java.util.Map.entry("cuda_version", "12.8"));
    assertThat(inv.describe()).isEqualTo("1 x NVIDIA-H200 (140 GiB), driver 570.124.06, CUDA 12.8, from fixture");
  }

  @Test
  void devicesAreOrderedByIndexAndMixedCardsSaySo() throws IOException {
    GpuDiscovery.Query q = GpuDiscovery.parseQuery(fixture("mixed.csv"));
    GpuInventory inv = new GpuInventory(q.devices(), q.driverVersion(), "", "fixture");

    assertThat(inv.devices()).extracting(GpuDevice::index, GpuDevice::name, GpuDevice::uuid).containsExactly(
        org.assertj.core.groups.Tuple.tuple(0, "NVIDIA A100-SXM4-80GB", ""),
        org.assertj.core.groups.Tuple.tuple(1, "NVIDIA GeForce RTX 4090", "GPU-0b8e6f1d-3a2c-4d5e-8f90-1a2b3c4d5e6f"));
    // The smallest device decides: a selector must not promise 80 GiB on the 24 GiB card.
    assertThat(inv.labels()).containsEntry("accelerator", "mixed").containsEntry("gpu_memory_gib", "23")
        .doesNotContainKey("cuda_version");
    assertThat(GpuInventory.none("no tool").labels()).isEmpty();
  }

  @Test
  void outputThatDoesNotParseIsRefusedNamingTheLine() {
    assertThatThrownBy(() -> GpuDiscovery.parseQuery("0, NVIDIA H200, 143771, GPU-1, 570.1\nNo devices were found\n"))
        .isInstanceOf(GpuDiscoveryException.class).hasMessageContaining("line 2").hasMessageContaining("No devices");
    assertThatThrownBy(() -> GpuDiscovery.parseQuery("zero, NVIDIA H200, 143771, GPU-1, 570.1"))
        .hasMessageContaining("line 1").hasMessageContaining("zero");
    assertThatThrownBy(() -> GpuDiscovery.parseQuery("0, A, 1, u, d\n0, B, 1, v, d"))
        .hasMessageContaining("index 0 twice");
    assertThat(GpuDiscovery.parseQuery("\n").devices()).isEmpty();
    assertThat(GpuDiscovery.parseCudaVersion("no banner")).isEmpty();
  }

  @Test
  void aHostWithoutTheToolHasNoGpusAndNoError() {
    GpuInventory inv = new GpuDiscovery(dir.resolve("nvidia-smi").toString(), Duration.ofSeconds(5)).discover();
    assertThat(inv.count()).isZero();
    assertThat(inv.source()).contains("not found");
    assertThat(GpuDiscovery.locate("surely-not-a-command-kiln", System.getenv("PATH"))).isEmpty();
  }

  @Test
  void theRealToolsAnswersAreRead() throws IOException {
    Files.writeString(dir.resolve("query.csv"), fixture("h200.csv"));
    Files.writeString(dir.resolve("banner.txt"), fixture("banner.txt"));
    Path tool = script("nvidia-smi", "case \"$1\" in --query-gpu=*) cat '" + dir.resolve("query.csv") + "';;"
        + " *) cat '" + dir.resolve("banner.txt") + "';; esac");

    GpuInventory inv = new GpuDiscovery(tool.toString(), Duration.ofSeconds(10)).discover();

    assertThat(inv.count()).isEqualTo(1);
    assertThat(inv.cudaVersion()).isEqualTo("12.8");
    assertThat(inv.driverVersion()).isEqualTo("570.124.06");
    assertThat(inv.source()).isEqualTo(tool.toString());
  }

  @Test
  void aToolThatFailsOrHangsIsALoudFailureNotZeroGpus() throws IOException {
    Files.writeString(dir.resolve("failed.txt"), fixture("driver-failed.txt"));
    Path failing = script("failing-smi", "cat '" + dir.resolve("failed.txt") + "'; exit 9");
    Path hanging = script("hanging-smi", "exec sleep 60");

    assertThatThrownBy(() -> new GpuDiscovery(failing.toString(), Duration.ofSeconds(10)).discover())
        .isInstanceOf(GpuDiscoveryException.class).hasMessageContaining("exit 9")
        .hasMessageContaining("couldn't communicate with the NVIDIA driver").hasMessageContaining("--gpus 0");
    assertThatThrownBy(() -> new GpuDiscovery(hanging.toString(), Duration.ofMillis(300)).discover())
        .isInstanceOf(GpuDiscoveryException.class).hasMessageContaining("did not answer within 300 ms");
  }

  private Path script(String name, String body) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    return p;
  }
}
