package io.kiln.pools.impl;

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
  void fallsBackToCpuWhenTheEngineLacksTheGpu() {
    assertThat(EngineSetup.chooseDevice(List.of(0), 0).device()).isEqualTo(Device.cpu());
    assertThat(EngineSetup.chooseDevice(List.of(0), 0).reason()).contains("reports 0 CUDA device(s)", "CPU-only");
    assertThat(EngineSetup.chooseDevice(List.of(1, 2), 2).device()).isEqualTo(Device.cpu());
    assertThat(EngineSetup.chooseDevice(List.of(1, 2), 2).reason()).contains("GPU 2 assigned");
  }

  @Test
  void negativeIndexIsAnError() {
    assertThatThrownBy(() -> EngineSetup.chooseDevice(List.of(-1), 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative GPU index -1");
  }
}
