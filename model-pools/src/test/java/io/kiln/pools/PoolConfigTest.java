package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class PoolConfigTest {

  @Test
  void defaults() {
    assertThat(PoolConfig.DEFAULTS).isEqualTo(new PoolConfig(
        new BatchingSpec(PoolConfig.DEFAULT_MAX_BATCH_SIZE, PoolConfig.DEFAULT_MAX_BATCH_DELAY),
        new QueueSpec(PoolConfig.DEFAULT_MAX_QUEUED, PoolConfig.DEFAULT_TIMEOUT), PoolConfig.DEFAULT_MAX_REQUEUES));
    assertThat(PoolConfig.DEFAULTS.maxRequeues()).isEqualTo(1);
  }

  @Test
  void builderSetsEveryField() {
    PoolConfig c = PoolConfig.builder().maxBatchSize(16).maxBatchDelay(Duration.ZERO).maxQueued(3)
        .defaultTimeout(Duration.ofSeconds(2)).maxRequeues(0).build();
    assertThat(c).isEqualTo(new PoolConfig(new BatchingSpec(16, Duration.ZERO), new QueueSpec(3, Duration.ofSeconds(2)), 0));
    assertThat(c.toBuilder().build()).isEqualTo(c);
    assertThat(PoolConfig.of(c.batching(), c.queue())).isEqualTo(c.toBuilder().maxRequeues(1).build());
  }

  @Test
  void theRequeueBudgetDerivesTheWorkerRequeuePolicy() {
    assertThat(PoolConfig.DEFAULTS.requeuePolicy()).isSameAs(io.kiln.runtime.RetryPolicy.WORKER_REQUEUE);
    io.kiln.runtime.RetryPolicy three = PoolConfig.builder().maxRequeues(3).build().requeuePolicy();
    assertThat(three.name()).isEqualTo("worker-requeue");
    assertThat(three.allows(3)).isTrue();
    assertThat(three.allows(4)).isFalse();
    assertThat(PoolConfig.builder().maxRequeues(0).build().requeuePolicy().allows(1)).isFalse();
  }

  @Test
  void settersRejectInvalidValuesAtOnceByTheSpecsRules() {
    PoolConfig.Builder b = PoolConfig.builder();
    assertThatThrownBy(() -> b.maxBatchSize(0)).hasMessageContaining("max_batch_size");
    assertThatThrownBy(() -> b.maxBatchDelay(Duration.ofMillis(-1))).hasMessageContaining("max_batch_delay_ms");
    assertThatThrownBy(() -> b.maxBatchDelay(Duration.ofDays(2))).hasMessageContaining("max_batch_delay_ms");
    assertThatThrownBy(() -> b.maxQueued(0)).hasMessageContaining("max_queued");
    assertThatThrownBy(() -> b.defaultTimeout(Duration.ZERO)).hasMessageContaining("timeout_ms");
    assertThatThrownBy(() -> b.maxRequeues(-1)).hasMessageContaining("maxRequeues");
    assertThatThrownBy(() -> new PoolConfig(null, QueueSpec.DEFAULT, 0)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new QueueSpec(1, Duration.ofDays(2))).isInstanceOf(IllegalArgumentException.class);
  }
}
