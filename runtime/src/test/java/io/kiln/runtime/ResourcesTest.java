package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ResourcesTest {

  @Test
  void fractionsDownTo1e4AreExact() {
    assertThat(Resources.cpu(0.0001).unitsOf(Resources.CPU)).isEqualTo(1);
    assertThat(Resources.cpu(0.0001).get(Resources.CPU)).isEqualTo(0.0001);
    assertThat(Resources.cpu(1.2345).unitsOf(Resources.CPU)).isEqualTo(12_345);
    assertThat(Resources.of("step_a_slot", 0.3333).get("step_a_slot")).isEqualTo(0.3333);
  }

  @Test
  void finerPrecisionIsRejected() {
    assertThatThrownBy(() -> Resources.cpu(0.00001)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1e-4");
    assertThatThrownBy(() -> Resources.cpu(0.00015)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Resources.of("step_a_slot", 1.23456)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void gpuAboveOneMustBeWhole() {
    assertThatThrownBy(() -> Resources.gpu(1.5)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("whole");
    assertThatThrownBy(() -> Resources.of(Map.of("GPU", 2.5))).isInstanceOf(IllegalArgumentException.class);
    // Decoding quantities (a node's available GPU: 1.5) is not a request and is allowed.
    assertThat(Resources.ofUnits(Map.of("GPU", 15_000L)).get(Resources.GPU)).isEqualTo(1.5);
    assertThat(Resources.gpu(0.5).get(Resources.GPU)).isEqualTo(0.5);
    assertThat(Resources.gpu(2).get(Resources.GPU)).isEqualTo(2.0);
    assertThat(Resources.gpu(0.0001).unitsOf(Resources.GPU)).isEqualTo(1);
    // Only requests are restricted: a 4-GPU node with half a device reserved has 3.5 available.
    assertThat(Resources.gpu(4).minus(Resources.gpu(0.5)).get(Resources.GPU)).isEqualTo(3.5);
  }

  @Test
  void negativeAndNonFiniteQuantitiesAreRejected() {
    assertThatThrownBy(() -> Resources.cpu(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Resources.cpu(-0.0001)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Resources.cpu(Double.NaN)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Resources.cpu(Double.POSITIVE_INFINITY)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Resources.ofUnits(Map.of("CPU", -1L))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Resources.of("", 1)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void tenTenthsMakeExactlyOne() {
    Resources sum = Resources.NONE;
    for (int i = 0; i < 10; i++) {
      sum = sum.plus(Resources.gpu(0.1));
    }
    assertThat(sum).isEqualTo(Resources.gpu(1));

    Resources left = Resources.gpu(1);
    for (int i = 0; i < 10; i++) {
      left = left.minus(Resources.gpu(0.1));
    }
    assertThat(left.isZero()).isTrue();
    assertThat(left).isEqualTo(Resources.NONE);
  }

  @Test
  void plusMinusAndFitsIn() {
    Resources a = Resources.cpu(2).withGpu(0.5);
    Resources b = Resources.cpu(1).with("step_a_slot", 1);

    assertThat(a.plus(b)).isEqualTo(Resources.of(Map.of("CPU", 3, "GPU", 0.5, "step_a_slot", 1)));
    assertThat(a.plus(b).minus(b)).isEqualTo(a);
    assertThat(a.minus(Resources.cpu(2))).isEqualTo(Resources.gpu(0.5));
    assertThatThrownBy(() -> a.minus(b)).isInstanceOf(IllegalArgumentException.class);

    assertThat(Resources.cpu(1).fitsIn(a)).isTrue();
    assertThat(a.fitsIn(a)).isTrue();
    assertThat(Resources.cpu(2.0001).fitsIn(a)).isFalse();
    assertThat(b.fitsIn(a)).as("capacity lacks step_a_slot").isFalse();
    assertThat(Resources.NONE.fitsIn(Resources.NONE)).isTrue();
    assertThat(a.fitsIn(Resources.NONE)).isFalse();
  }

  @Test
  void zeroQuantitiesAreDropped() {
    assertThat(Resources.cpu(0)).isEqualTo(Resources.NONE).hasSameHashCodeAs(Resources.NONE);
    assertThat(Resources.cpu(1).withCpu(0)).isEqualTo(Resources.NONE);
    assertThat(Resources.ofUnits(Map.of("CPU", 0L)).isZero()).isTrue();
    assertThat(Resources.cpu(1).units()).containsOnlyKeys("CPU");
  }

  @Test
  void toStringIsSortedAndCompact() {
    assertThat(Resources.NONE).hasToString("{}");
    assertThat(Resources.gpu(0.5).withCpu(8).with("step_a_slot", 4).withMemory(1024))
        .hasToString("{CPU: 8, GPU: 0.5, memory: 1024, step_a_slot: 4}");
    assertThat(Resources.cpu(0.0001)).hasToString("{CPU: 1.0E-4}");
  }

  @Test
  void unitsRoundTrip() {
    Resources r = Resources.cpu(1.5).withGpu(0.25).with("step_a_slot", 2);
    assertThat(Resources.ofUnits(r.units())).isEqualTo(r);
    assertThat(Resources.of(r.asMap())).isEqualTo(r);
  }
}
