package io.kiln.engines.pytorch.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Device;
import java.util.List;
import org.junit.jupiter.api.Test;

class EngineSetupTest {

  @Test
  void noGpuAssignedMeansCpu() {
    EngineSetup.DeviceChoice c = EngineSetup.chooseDevice(List.of(), 4);

    assertThat(c.device()).isEqualTo(Device.cpu());
    assertThat(c.reason()).contains("no GPU assigned");
  }

  @Test
  void assignedGpuIsUsedWhenTheEngineHasIt() {
    EngineSetup.DeviceChoice c = EngineSetup.chooseDevice(List.of(2, 3), 4);

    assertThat(c.device()).isEqualTo(Device.gpu(2));
    assertThat(c.reason()).contains("GPU 2 assigned");
  }

  @Test
  void aGpuTheEngineLacksFailsTheLoadNamingTheCause() {
    assertThatThrownBy(() -> EngineSetup.chooseDevice(List.of(0), 0, "PyTorch 2.7.1 (CPU-only)", false))
        .isInstanceOf(io.kiln.pools.ModelLoadException.class)
        .hasMessageContaining("GPU 0 assigned but the PyTorch engine reports 0 CUDA device(s)")
        .hasMessageContaining("the native library is PyTorch 2.7.1 (CPU-only)")
        .hasMessageContaining("allow_cpu_fallback: true").hasMessageContaining("docs/gpu.md");
    assertThatThrownBy(() -> EngineSetup.chooseDevice(List.of(1, 2), 2, "PyTorch 2.7.1", false))
        .hasMessageContaining("GPU 2 assigned");
    // A worker without a GPU, or one whose GPU the engine has, is unaffected by the rule.
    assertThat(EngineSetup.chooseDevice(List.of(), 0, "PyTorch 2.7.1", false).device()).isEqualTo(Device.cpu());
    assertThat(EngineSetup.chooseDevice(List.of(1), 2, "PyTorch 2.7.1", false).device()).isEqualTo(Device.gpu(1));
  }

  @Test
  void onlyAnExplicitAllowCpuFallbackRunsAGpuWorkerOnTheCpu() {
    EngineSetup.DeviceChoice c = EngineSetup.chooseDevice(List.of(0), 0, "PyTorch 2.7.1", true);
    assertThat(c.device()).isEqualTo(Device.cpu());
    assertThat(c.reason()).contains("reports 0 CUDA device(s)", "CPU-only", "allow_cpu_fallback: true");
  }

  @Test
  void negativeIndexIsAnError() {
    assertThatThrownBy(() -> EngineSetup.chooseDevice(List.of(-1), 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative GPU index -1");
  }
}
