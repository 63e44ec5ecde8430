package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --gpus auto|N}: what a node advertises, from a real process standing in for nvidia-smi. */
class GpuOptionsTest {

  @TempDir
  Path dir;

  private static NodeCommandOptions options(String gpus, String nvidiaSmi) {
    NodeCommandOptions o = new NodeCommandOptions();
    o.host = "127.0.0.1";
    o.nodeId = "n1";
    o.gpus = gpus;
    o.nvidiaSmi = nvidiaSmi;
    return o;
  }

  @Test
  void autoOnAMachineWithoutNvidiaSmiIsZeroGpusAndNoError() {
    NodeOptions node = options("auto", dir.resolve("nvidia-smi").toString()).node();
    assertThat(node.resources().get(Resources.GPU)).isZero();
    assertThat(node.labels()).isEmpty();
    // The default looks on PATH, which on CI machines has no nvidia-smi either.
    assertThat(options(null, null).gpus().count()).isGreaterThanOrEqualTo(0);
  }

  @Test
  void autoAdvertisesTheFoundGpusWithLabelsTheUsersOwnWin() throws IOException {
    Path smi = script("nvidia-smi", "case \"$1\" in --query-gpu=*) echo '0, NVIDIA H200, 143771, GPU-a, 570.124.06';"
        + " echo '1, NVIDIA H200, 143771, GPU-b, 570.124.06';; *) echo 'Driver Version: 570.124.06   CUDA Version: 12.8';; esac");
    NodeCommandOptions o = options("auto", smi.toString());
    o.labels.put("accelerator", "h200");

    NodeOptions node = o.node();

    assertThat(node.resources().get(Resources.GPU)).isEqualTo(2.0);
    assertThat(node.labels()).containsAllEntriesOf(Map.of("accelerator", "h200", "gpu_memory_gib", "140",
        "gpu_driver", "570.124.06", "cuda_version", "12.8"));
    assertThat(o.gpus().description()).startsWith("2 x NVIDIA-H200 (140 GiB)");
    // Found GPUs are sampled for /metrics, with the same nvidia-smi.
    assertThat(o.gpuSampling().devices()).containsExactly(0, 1);
    assertThat(o.gpuSampling().sampler().executable()).isEqualTo(smi.toString());
    assertThat(o.gpuSampling().sampler().period()).isEqualTo(java.time.Duration.ofSeconds(10));
    o.gpuSamplePeriodSeconds = 0;
    assertThatThrownBy(o::gpuSampling).isInstanceOf(CliException.class)
        .hasMessage("--gpu-sample-period must be at least 1 second, got 0");
  }

  @Test
  void aCountDeclaresLogicalGpusWithoutLabels() {
    NodeOptions node = options("3", null).node();
    assertThat(node.resources().get(Resources.GPU)).isEqualTo(3.0);
    assertThat(node.labels()).isEmpty();
    assertThat(options("0", null).node().resources().get(Resources.GPU)).isZero();
    // Declared GPUs have no tool to sample: no GPU meters.
    assertThat(options("3", null).gpuSampling()).isNull();
    assertThat(options("auto", dir.resolve("nvidia-smi").toString()).gpuSampling()).isNull();
  }

  @Test
  void aBrokenDriverOrABadValueStopsTheNodeWithTheReason() throws IOException {
    Path smi = script("nvidia-smi", "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"; exit 9");

    assertThatThrownBy(() -> options("auto", smi.toString()).node()).isInstanceOf(CliException.class)
        .hasMessageStartingWith("--gpus auto: ").hasMessageContaining("couldn't communicate")
        .hasMessageContaining("--gpus 0");
    assertThatThrownBy(() -> options("lots", null).node()).hasMessage("--gpus must be auto or a count >= 0, got 'lots'");
    assertThatThrownBy(() -> options("-1", null).node()).hasMessage("--gpus must be >= 0, got -1");
  }

  private Path script(String name, String body) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    return p;
  }
}
