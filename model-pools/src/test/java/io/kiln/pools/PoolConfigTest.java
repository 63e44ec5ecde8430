package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class PoolConfigTest {

  @Test
  void defaults() {
    assertThat(PoolConfig.DEFAULTS).isEqualTo(new PoolConfig(PoolConfig.DEFAULT_MAX_BATCH_SIZE,
        PoolConfig.DEFAULT_MAX_BATCH_DELAY, PoolConfig.DEFAULT_MAX_QUEUED, PoolConfig.DEFAULT_TIMEOUT,
        PoolConfig.DEFAULT_MAX_REQUEUES));
    assertThat(PoolConfig.DEFAULTS.maxRequeues()).isEqualTo(1);
  }

  @Test
  void builderSetsEveryField() {
    PoolConfig c = PoolConfig.builder().maxBatchSize(16).maxBatchDelay(Duration.ZERO).maxQueued(3)
        .defaultTimeout(Duration.ofSeconds(2)).maxRequeues(0).build();
    assertThat(c).isEqualTo(new PoolConfig(16, Duration.ZERO, 3, Duration.ofSeconds(2), 0));
    assertThat(c.toBuilder().build()).isEqualTo(c);
  }

  @Test
  void settersRejectInvalidValuesAtOnce() {
    PoolConfig.Builder b = PoolConfig.builder();
    assertThatThrownBy(() -> b.maxBatchSize(0)).hasMessageContaining("maxBatchSize");
    assertThatThrownBy(() -> b.maxBatchDelay(Duration.ofMillis(-1))).hasMessageContaining("maxBatchDelay");
    assertThatThrownBy(() -> b.maxBatchDelay(Duration.ofMinutes(2))).hasMessageContaining("maxBatchDelay");
    assertThatThrownBy(() -> b.maxQueued(0)).hasMessageContaining("maxQueued");
    assertThatThrownBy(() -> b.defaultTimeout(Duration.ZERO)).hasMessageContaining("defaultTimeout");
    assertThatThrownBy(() -> b.maxRequeues(-1)).hasMessageContaining("maxRequeues");
    assertThatThrownBy(() -> new PoolConfig(1, null, 1, Duration.ofSeconds(1), 0)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new PoolConfig(1, Duration.ZERO, 1, Duration.ofDays(2), 0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
