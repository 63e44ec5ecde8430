package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kiln.loadtest.impl.ArrivalSchedule;
import org.junit.jupiter.api.Test;

class ArrivalScheduleTest {

  @Test
  void withoutWarmupRequestsAreEvenlySpaced() {
    ArrivalSchedule s = new ArrivalSchedule(200, 0);

    assertThat(s.firstMeasuredIndex()).isZero();
    assertThat(s.offsetNs(0)).isZero();
    assertThat(s.offsetNs(1)).isEqualTo(5_000_000);
    assertThat(s.offsetNs(1000)).isEqualTo(5_000_000_000L);
  }

  @Test
  void warmupRampsFromATenthToTheFullRateThenHoldsIt() {
    long warmupNs = 2_000_000_000L;
    ArrivalSchedule s = new ArrivalSchedule(1000, warmupNs);
    long first = s.firstMeasuredIndex();

    // Average rate over a linear ramp 10 % -> 100 % is 55 %.
    assertThat(first).isEqualTo(1100);
    assertThat(s.offsetNs(first - 1)).isLessThan(warmupNs);
    assertThat(s.offsetNs(first)).isGreaterThanOrEqualTo(warmupNs);
    // Start of the ramp: ~100/s apart; end of the ramp and after: 1000/s.
    assertThat(s.offsetNs(1) - s.offsetNs(0)).isCloseTo(10_000_000L, within(500_000L));
    assertThat(s.offsetNs(first - 1) - s.offsetNs(first - 2)).isCloseTo(1_000_000L, within(20_000L));
    assertThat(s.offsetNs(first + 501) - s.offsetNs(first + 1)).isEqualTo(500_000_000L);
    for (long i = 1; i < first + 100; i++) {
      assertThat(s.offsetNs(i)).isGreaterThan(s.offsetNs(i - 1));
    }
  }

  @Test
  void aRunOfRForDSecondsHasExactlyRTimesDMeasuredRequests() {
    ArrivalSchedule s = new ArrivalSchedule(10_000, 10_000_000_000L);

    assertThat(s.firstMeasuredIndex()).isEqualTo(55_000);
    assertThat(s.offsetNs(55_000 + 99_999)).isLessThan(20_000_000_000L);
    assertThat(s.offsetNs(55_000 + 100_000)).isEqualTo(20_000_000_000L);
  }

  @Test
  void oddRatesNeverPutAWarmupRequestIntoTheMeasurement() {
    for (double rate : new double[] {0.3, 7, 333.3, 12_345.6}) {
      for (long w : new long[] {1, 299_999_999L, 300_000_000L, 1_234_567_891L}) {
        ArrivalSchedule s = new ArrivalSchedule(rate, w);
        long first = s.firstMeasuredIndex();
        if (first > 0) {
          assertThat(s.offsetNs(first - 1)).as("rate %s warmup %s", rate, w).isLessThan(w);
        }
        assertThat(s.offsetNs(first)).as("rate %s warmup %s", rate, w).isGreaterThanOrEqualTo(w);
      }
    }
  }
}
