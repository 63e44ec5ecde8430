package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ConstructorBackoffTest {

  @Test
  void aLiveIncarnationThatFailedRestartsAtOnce() {
    assertThat(ActorCell.constructorBackoffMillis(0)).isZero();
  }

  @Test
  void failedConstructionsInARowDoubleTheWaitUpToItsCap() {
    assertThat(ActorCell.constructorBackoffMillis(1)).isEqualTo(100);
    assertThat(ActorCell.constructorBackoffMillis(2)).isEqualTo(200);
    assertThat(ActorCell.constructorBackoffMillis(4)).isEqualTo(800);
    assertThat(ActorCell.constructorBackoffMillis(7)).isEqualTo(5_000);
    assertThat(ActorCell.constructorBackoffMillis(Integer.MAX_VALUE)).isEqualTo(5_000);
  }
}
