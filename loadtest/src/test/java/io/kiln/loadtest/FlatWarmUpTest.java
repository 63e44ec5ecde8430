package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.loadtest.impl.FlatWarmUp;
import org.junit.jupiter.api.Test;

class FlatWarmUpTest {

  @Test
  void stopsAtTheFirstRoundWithinThePercentageOfThePreviousOne() {
    double[] rps = {1000, 5000, 9000, 9200, 9250, 9300};

    FlatWarmUp.Result r = FlatWarmUp.run(8, 3, i -> rps[i - 1]);

    assertThat(r.flat()).isTrue();
    assertThat(r.rounds()).containsExactly(1000.0, 5000.0, 9000.0, 9200.0);
    assertThat(r.record()).isEqualTo("round 1 1000.0\nround 2 5000.0\nround 3 9000.0\nround 4 9200.0\nflat yes\n");
  }

  @Test
  void givesUpAfterTheMaximumAndSaysItWasNotFlat() {
    FlatWarmUp.Result r = FlatWarmUp.run(3, 3, i -> i * 1000);

    assertThat(r.flat()).isFalse();
    assertThat(r.rounds()).hasSize(3);
    assertThat(r.record()).endsWith("flat no\n");
  }

  @Test
  void theRuleIsRelativeToTheEarlierRoundAndNeverFlatFromZero() {
    assertThat(FlatWarmUp.flat(100, 102.9, 3)).isTrue();
    assertThat(FlatWarmUp.flat(100, 97.1, 3)).isTrue();
    assertThat(FlatWarmUp.flat(100, 103, 3)).isFalse();
    assertThat(FlatWarmUp.flat(0, 0, 3)).isFalse();
    assertThatThrownBy(() -> FlatWarmUp.run(1, 3, i -> 1)).hasMessageContaining("at least 2 rounds");
  }
}
