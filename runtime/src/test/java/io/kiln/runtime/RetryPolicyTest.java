package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

  private static final RetryPolicy EXP = new RetryPolicy("exp", 5, Duration.ofMillis(100), 2, Duration.ofSeconds(5));

  @Test
  void theWaitDoublesFromTheInitialBackoffUpToItsCap() {
    assertThat(EXP.delayMillis(1)).isEqualTo(100);
    assertThat(EXP.delayMillis(2)).isEqualTo(200);
    assertThat(EXP.delayMillis(4)).isEqualTo(800);
    assertThat(EXP.delayMillis(6)).isEqualTo(3_200);
    assertThat(EXP.delayMillis(7)).isEqualTo(5_000);
    assertThat(EXP.delay(Integer.MAX_VALUE)).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void theFirstAttemptNeverWaits() {
    assertThat(EXP.delay(0)).isZero();
    assertThat(EXP.delay(-3)).isZero();
  }

  @Test
  void aFixedPolicyWaitsTheSameEveryTimeAndAnImmediateOneNever() {
    RetryPolicy fixed = RetryPolicy.fixed("f", 3, Duration.ofMillis(250));
    assertThat(fixed.delayMillis(1)).isEqualTo(250);
    assertThat(fixed.delayMillis(30)).isEqualTo(250);
    assertThat(RetryPolicy.immediate("i", 3).delay(2)).isZero();
  }

  @Test
  void attemptsCountTheFirstTry() {
    RetryPolicy p = RetryPolicy.immediate("p", 3);
    assertThat(p.maxRetries()).isEqualTo(2);
    assertThat(p.allows(0)).isTrue();
    assertThat(p.allows(1)).isTrue();
    assertThat(p.allows(2)).isTrue();
    assertThat(p.allows(3)).isFalse();
    RetryPolicy never = p.withMaxAttempts(1);
    assertThat(never.allows(1)).isFalse();
    assertThat(never.allows(0)).isTrue();
  }

  @Test
  void anUnlimitedPolicyAllowsEveryRetry() {
    RetryPolicy p = EXP.withMaxRetries(RetryPolicy.UNLIMITED);
    assertThat(p.maxAttempts()).isEqualTo(RetryPolicy.UNLIMITED);
    assertThat(p.maxRetries()).isEqualTo(RetryPolicy.UNLIMITED);
    assertThat(p.allows(Integer.MAX_VALUE)).isTrue();
  }

  @Test
  void aUsersRetryCountDerivesAPolicyThatKeepsNameAndBackoff() {
    RetryPolicy p = RetryPolicy.ACTOR_RESTART.withMaxRetries(3);
    assertThat(p.name()).isEqualTo("actor-restart");
    assertThat(p.maxAttempts()).isEqualTo(4);
    assertThat(p.allows(3)).isTrue();
    assertThat(p.allows(4)).isFalse();
    assertThat(p.delayMillis(2)).isEqualTo(RetryPolicy.ACTOR_RESTART.delayMillis(2));
    assertThat(RetryPolicy.ACTOR_RESTART.withMaxRetries(0)).isSameAs(RetryPolicy.ACTOR_RESTART);
    assertThat(EXP.withBackoff(Duration.ofMillis(1), 3, Duration.ofMillis(9)).delayMillis(3)).isEqualTo(9);
  }

  @Test
  void optionsDeriveTheirPolicyFromTheNamedDefault() {
    ActorOptions actor = ActorOptions.builder().maxRestarts(2).maxTaskRetries(-1).build();
    assertThat(actor.restartPolicy()).isEqualTo(RetryPolicy.ACTOR_RESTART.withMaxAttempts(3));
    assertThat(actor.callRetryPolicy().maxAttempts()).isEqualTo(RetryPolicy.UNLIMITED);
    assertThat(ActorOptions.DEFAULT.restartPolicy()).isSameAs(RetryPolicy.ACTOR_RESTART);
    assertThat(ActorOptions.DEFAULT.restartPolicy().allows(1)).isFalse();
    assertThat(TaskOptions.DEFAULT.retryPolicy()).isSameAs(RetryPolicy.TASK_SYSTEM_FAILURE);
    RetryPolicy never = TaskOptions.builder().maxRetries(0).build().retryPolicy();
    assertThat(never.name()).isEqualTo("task-system-failure");
    assertThat(never.allows(1)).isFalse();
  }

  @Test
  void invalidArgumentsAreRefusedNamingThePolicy() {
    assertThatThrownBy(() -> new RetryPolicy(" ", 1, Duration.ZERO, 1, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RetryPolicy.immediate("x", 0)).hasMessageContaining("x: maxAttempts");
    assertThatThrownBy(() -> RetryPolicy.immediate("x", -2)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RetryPolicy.fixed("x", 1, Duration.ofMillis(-1))).hasMessageContaining("negative");
    assertThatThrownBy(() -> new RetryPolicy("x", 1, Duration.ZERO, 0.5, Duration.ZERO))
        .hasMessageContaining("multiplier");
    assertThatThrownBy(() -> new RetryPolicy("x", 1, Duration.ZERO, Double.NaN, Duration.ZERO))
        .hasMessageContaining("multiplier");
    assertThatThrownBy(() -> new RetryPolicy("x", 1, Duration.ofSeconds(2), 2, Duration.ofSeconds(1)))
        .hasMessageContaining("maxBackoff");
    assertThatThrownBy(() -> EXP.withMaxRetries(-2)).hasMessageContaining("exp: retries");
    assertThatThrownBy(() -> new RetryPolicy(null, 1, Duration.ZERO, 1, Duration.ZERO))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void toStringNamesThePolicyAndItsShape() {
    assertThat(RetryPolicy.ACTOR_RESTART).hasToString("actor-restart (1 attempt, backoff 100 ms x2 up to 5 s)");
    assertThat(RetryPolicy.POOL_RESEND).hasToString("pool-resend (2 attempts, at once)");
    assertThat(RetryPolicy.JOB_REDISPATCH).hasToString("job-redispatch (1001 attempts, every 200 ms)");
    assertThat(EXP.withMaxRetries(-1).toString()).startsWith("exp (unlimited attempts");
  }

  @Test
  void theCatalogueKeepsKilnsDefaults() {
    assertThat(TaskOptions.DEFAULT_MAX_RETRIES).isEqualTo(RetryPolicy.TASK_SYSTEM_FAILURE.maxRetries()).isEqualTo(3);
    assertThat(ActorOptions.DEFAULT_MAX_RESTARTS).isEqualTo(RetryPolicy.ACTOR_RESTART.maxRetries()).isZero();
    assertThat(ActorOptions.DEFAULT_MAX_TASK_RETRIES).isEqualTo(RetryPolicy.ACTOR_CALL_RETRY.maxRetries()).isZero();
    assertThat(RetryPolicy.POOL_RESEND.maxRetries()).isEqualTo(1);
    assertThat(RetryPolicy.WORKER_RESTART.maxRetries()).isEqualTo(3);
    assertThat(RetryPolicy.WORKER_RESTART.delay(3)).isEqualTo(RetryPolicy.ACTOR_RESTART.delay(3));
    assertThat(RetryPolicy.WORKER_REQUEUE.maxRetries()).isEqualTo(1);
    assertThat(RetryPolicy.JOB_INPUT_RETRY.delayMillis(1)).isEqualTo(200);
    assertThat(RetryPolicy.JOB_INPUT_RETRY.delayMillis(6)).isEqualTo(5_000);
    assertThat(RetryPolicy.STEP_RETRY.delayMillis(1)).isEqualTo(100);
    assertThat(RetryPolicy.STEP_RETRY.delayMillis(7)).isEqualTo(5_000);
  }
}
