package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class TimeoutPolicyTest {

  @Test
  void toStringNamesThePolicyAndItsTimeout() {
    assertThat(TimeoutPolicy.POOL_CALL_GRACE).hasToString("pool-call-grace (5 s)");
    assertThat(TimeoutPolicy.POOL_CONTROL).hasToString("pool-control (30 min)");
    assertThat(new TimeoutPolicy("t", Duration.ofMillis(1500))).hasToString("t (1.5 s)");
    assertThat(new TimeoutPolicy("t", Duration.ofMillis(250))).hasToString("t (250 ms)");
  }

  @Test
  void aDerivedTimeoutKeepsItsName() {
    TimeoutPolicy p = TimeoutPolicy.REMOTE_CREATE_PING.withTimeout(Duration.ofMillis(50));
    assertThat(p.name()).isEqualTo("remote-create-ping");
    assertThat(p.toMillis()).isEqualTo(50);
    assertThat(TimeoutPolicy.REMOTE_CREATE_PING.toMillis()).isEqualTo(10_000);
  }

  @Test
  void aTimeoutMustBePositiveAndNamed() {
    assertThatThrownBy(() -> new TimeoutPolicy("t", Duration.ZERO)).hasMessageContaining("t: timeout");
    assertThatThrownBy(() -> new TimeoutPolicy("t", Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new TimeoutPolicy("", Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new TimeoutPolicy("t", null)).isInstanceOf(NullPointerException.class);
  }
}
