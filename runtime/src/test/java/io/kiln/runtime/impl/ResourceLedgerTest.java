package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.Allocation.GpuShare;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ResourceLedgerTest {

  private static final Resources NODE = Resources.cpu(16).withGpu(4).with("step_a_slot", 2);

  private static Allocation reserve(ResourceLedger ledger, Resources r) {
    return ledger.tryReserve(r).orElseThrow(() -> new AssertionError("refused " + r + " with " + ledger.available()));
  }

  @Test
  void nodeGpuTotalMustBeWhole() {
    assertThatThrownBy(() -> new ResourceLedger(Resources.gpu(0.5))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("whole");
    assertThatThrownBy(() -> new ResourceLedger(Resources.gpu(ResourceLedger.MAX_GPUS + 1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(new ResourceLedger(Resources.cpu(2)).total()).isEqualTo(Resources.cpu(2));
  }

  @Test
  void twoWholeGpuActorsGetDistinctDevices() {
    ResourceLedger ledger = new ResourceLedger(NODE);

    Allocation a = reserve(ledger, Resources.gpu(1));
    Allocation b = reserve(ledger, Resources.gpu(1));

    assertThat(a.gpuIndices()).containsExactly(0);
    assertThat(b.gpuIndices()).containsExactly(1);
    assertThat(a.gpus()).containsExactly(new GpuShare(0, 1.0));
    assertThat(a.id()).isNotEqualTo(b.id());
    assertThat(ledger.available()).isEqualTo(Resources.cpu(16).withGpu(2).with("step_a_slot", 2));
  }

  @Test
  void wholeMultiGpuRequestTakesDistinctEntirelyFreeDevices() {
    ResourceLedger ledger = new ResourceLedger(NODE);
    reserve(ledger, Resources.gpu(1));      // device 0
    reserve(ledger, Resources.gpu(0.5));    // device 1, partly used

    Allocation two = reserve(ledger, Resources.gpu(2).withCpu(2));

    assertThat(two.gpuIndices()).containsExactly(2, 3);
    assertThat(two.gpus()).extracting(GpuShare::fraction).containsExactly(1.0, 1.0);
    assertThat(two.resources()).isEqualTo(Resources.gpu(2).withCpu(2));
  }

  @Test
  void fractionsPackOntoOneDeviceBeforeOpeningTheNext() {
    ResourceLedger ledger = new ResourceLedger(NODE);

    Allocation a = reserve(ledger, Resources.gpu(0.5));
    Allocation b = reserve(ledger, Resources.gpu(0.5));
    Allocation c = reserve(ledger, Resources.gpu(0.5));
    Allocation whole = reserve(ledger, Resources.gpu(1));

    assertThat(a.gpus()).containsExactly(new GpuShare(0, 0.5));
    assertThat(b.gpus()).containsExactly(new GpuShare(0, 0.5));
    assertThat(c.gpus()).containsExactly(new GpuShare(1, 0.5));
    assertThat(whole.gpuIndices()).as("skips the partly used device 1").containsExactly(2);
  }

  @Test
  void tenTenthsFillOneDeviceExactly() {
    ResourceLedger ledger = new ResourceLedger(Resources.gpu(2));

    for (int i = 0; i < 10; i++) {
      assertThat(reserve(ledger, Resources.gpu(0.1)).gpuIndices()).containsExactly(0);
    }

    assertThat(reserve(ledger, Resources.gpu(0.1)).gpuIndices()).containsExactly(1);
    assertThat(ledger.available()).isEqualTo(Resources.gpu(0.9));
  }

  @Test
  void fractionGoesToTheMostUsedDeviceThatStillFits() {
    ResourceLedger ledger = new ResourceLedger(Resources.gpu(3));
    Allocation a = reserve(ledger, Resources.gpu(0.5));  // device 0
    reserve(ledger, Resources.gpu(0.5));                 // device 0, now full
    reserve(ledger, Resources.gpu(0.3));                 // device 1
    ledger.release(a);                                   // device 0: 0.5 used, device 1: 0.3 used

    assertThat(reserve(ledger, Resources.gpu(0.2)).gpuIndices()).containsExactly(0);   // 0.7 used
    assertThat(reserve(ledger, Resources.gpu(0.5)).gpuIndices()).containsExactly(1);   // 0.8 used
    assertThat(reserve(ledger, Resources.gpu(0.3)).gpuIndices()).containsExactly(0);   // full
    assertThat(reserve(ledger, Resources.gpu(0.3)).gpuIndices()).containsExactly(2);
  }

  @Test
  void refusesWhenFragmentationPreventsItThoughTheSumWouldFit() {
    ResourceLedger ledger = new ResourceLedger(NODE);
    for (int i = 0; i < 4; i++) {
      assertThat(reserve(ledger, Resources.gpu(0.6)).gpuIndices()).containsExactly(i);
    }
    Resources before = ledger.available();
    assertThat(before.get(Resources.GPU)).isEqualTo(1.6);

    assertThat(ledger.tryReserve(Resources.gpu(1))).isEmpty();
    assertThat(ledger.tryReserve(Resources.gpu(0.5))).isEmpty();
    assertThat(ledger.available()).isEqualTo(before);
    assertThat(reserve(ledger, Resources.gpu(0.4)).gpuIndices()).containsExactly(0);
  }

  @Test
  void refusesWhenAnyQuantityIsShortAndChangesNothing() {
    ResourceLedger ledger = new ResourceLedger(NODE);
    reserve(ledger, Resources.of("step_a_slot", 2));
    Resources before = ledger.available();

    assertThat(ledger.tryReserve(Resources.cpu(1).with("step_a_slot", 1))).isEmpty();
    assertThat(ledger.tryReserve(Resources.cpu(17))).isEmpty();
    assertThat(ledger.tryReserve(Resources.gpu(5))).isEmpty();
    assertThat(ledger.tryReserve(Resources.of("other", 1))).isEmpty();
    assertThat(new ResourceLedger(Resources.cpu(4)).tryReserve(Resources.gpu(0.5))).isEmpty();
    assertThat(ledger.available()).isEqualTo(before);
  }

  @Test
  void zeroAndCpuOnlyRequestsHoldNoDevice() {
    ResourceLedger ledger = new ResourceLedger(NODE);

    Allocation none = reserve(ledger, Resources.NONE);
    Allocation cpu = reserve(ledger, Resources.cpu(0.25));

    assertThat(none.gpus()).isEmpty();
    assertThat(cpu.gpuIndices()).isEmpty();
    assertThat(ledger.available()).isEqualTo(NODE.minus(Resources.cpu(0.25)));
  }

  @Test
  void releaseReturnsCapacityAndIsIdempotent() {
    ResourceLedger ledger = new ResourceLedger(NODE);
    Allocation a = reserve(ledger, Resources.gpu(1).withCpu(4));
    Allocation b = reserve(ledger, Resources.gpu(0.5));

    assertThat(ledger.release(a)).isTrue();
    Resources afterFirst = ledger.available();
    assertThat(ledger.release(a)).isFalse();
    assertThat(ledger.available()).isEqualTo(afterFirst);
    assertThat(afterFirst).isEqualTo(NODE.minus(Resources.gpu(0.5)));
    assertThat(reserve(ledger, Resources.gpu(1)).gpuIndices()).as("device 0 is free again").containsExactly(0);

    assertThat(ledger.release(b)).isTrue();
    assertThat(reserve(ledger, Resources.gpu(1)).gpuIndices()).as("device 1 is free again").containsExactly(1);
  }

  @Test
  void releaseOfAnAllocationNotIssuedHereIsRefused() {
    ResourceLedger ledger = new ResourceLedger(NODE);
    ResourceLedger other = new ResourceLedger(NODE);
    Allocation mine = reserve(ledger, Resources.cpu(1));
    Allocation foreign = reserve(other, Resources.cpu(8));
    assertThat(foreign.id()).isEqualTo(mine.id());

    assertThat(ledger.release(foreign)).isFalse();
    assertThat(ledger.release(new Allocation(999, Resources.cpu(1), List.of()))).isFalse();
    assertThat(ledger.available()).isEqualTo(NODE.minus(Resources.cpu(1)));
  }

  @Test
  void fillingAndEmptyingReturnsToTotal() {
    ResourceLedger ledger = new ResourceLedger(NODE);
    List<Allocation> held = new ArrayList<>();
    Optional<Allocation> next;
    while ((next = ledger.tryReserve(Resources.gpu(0.25).withCpu(0.5))).isPresent()) {
      held.add(next.get());
    }

    assertThat(held).hasSize(16);
    assertThat(held).extracting(a -> a.gpuIndices().get(0)).containsExactly(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    held.forEach(a -> assertThat(ledger.release(a)).isTrue());
    assertThat(ledger.available()).isEqualTo(NODE);
  }

  @Test
  void allocationValuesValidate() {
    assertThatThrownBy(() -> new GpuShare(-1, 1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new GpuShare(0, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new GpuShare(0, 1.5)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Allocation(1, null, List.of())).isInstanceOf(NullPointerException.class);
    List<GpuShare> shares = new ArrayList<>(List.of(new GpuShare(2, 1), new GpuShare(5, 1)));
    Allocation a = new Allocation(1, Resources.gpu(2), shares);
    shares.clear();
    assertThat(a.gpuIndices()).containsExactly(2, 5);
  }
}
