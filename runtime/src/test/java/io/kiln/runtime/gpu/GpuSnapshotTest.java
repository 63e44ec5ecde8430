package io.kiln.runtime.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.gpu.GpuSnapshot.DeviceSample;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Parsing the sampler's two nvidia-smi queries from recorded-format fixtures. */
class GpuSnapshotTest {

  private static final double MIB = 1 << 20;

  private static String fixture(String name) throws IOException {
    try (InputStream in = GpuSnapshotTest.class.getResourceAsStream("/gpu/" + name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void devicesAreReadInBaseUnits() throws IOException {
    assertThat(GpuSnapshot.parseDevices(fixture("sample-h200x2.csv"))).containsExactly(
        new DeviceSample(0, 81234 * MIB, 143771 * MIB, 0.37), new DeviceSample(1, 1 * MIB, 143771 * MIB, 0.0));
  }

  @Test
  void fieldsTheToolWillNotTellAreNaNNotZero() throws IOException {
    List<DeviceSample> mig = GpuSnapshot.parseDevices(fixture("sample-mig.csv"));

    assertThat(mig.get(0).memoryUsedBytes()).isEqualTo(9872 * MIB);
    assertThat(mig.get(0).utilization()).isNaN();
    assertThat(mig.get(1).memoryUsedBytes()).isNaN();
    assertThat(mig.get(1).memoryTotalBytes()).isNaN();
    assertThat(mig.get(1).utilization()).isNaN();
  }

  @Test
  void aProcessesMemoryIsSummedOverItsGpus() throws IOException {
    GpuSnapshot s = new GpuSnapshot(1, List.of(), GpuSnapshot.parseProcesses(fixture("sample-apps.csv")), true);

    assertThat(s.processes()).hasSize(4);
    assertThat(s.processMemoryBytes(4242)).isEqualTo((40960 + 1024) * MIB);
    assertThat(s.processMemoryBytes(977)).isEqualTo(40274 * MIB);
    assertThat(s.processMemoryBytes(31337)).as("listed, amount [N/A]").isNaN();
    assertThat(s.processMemoryBytes(1)).as("not listed: holds no device memory").isZero();
    assertThat(GpuSnapshot.NONE.processMemoryBytes(4242)).as("never asked").isNaN();
    assertThat(GpuSnapshot.NONE.sampled()).isFalse();
  }

  @Test
  void noProcessesIsNoLinesOrTheToolsSentence() {
    assertThat(GpuSnapshot.parseProcesses("")).isEmpty();
    assertThat(GpuSnapshot.parseProcesses("No running processes found\n")).isEmpty();
  }

  @Test
  void outputThatDoesNotParseIsRefusedNamingTheLine() {
    assertThatThrownBy(() -> GpuSnapshot.parseDevices("0, 1, 2, 3\n1, 2, 3\n"))
        .isInstanceOf(GpuDiscoveryException.class).hasMessageContaining("line 2").hasMessageContaining("expected 4");
    assertThatThrownBy(() -> GpuSnapshot.parseDevices("zero, 1, 2, 3"))
        .isInstanceOf(GpuDiscoveryException.class).hasMessageContaining("line 1").hasMessageContaining("zero");
    assertThatThrownBy(() -> GpuSnapshot.parseProcesses("4242, GPU-a, lots"))
        .isInstanceOf(GpuDiscoveryException.class).hasMessageContaining("lots");
  }
}
