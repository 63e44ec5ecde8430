package io.kiln.pools.impl;

import static io.kiln.pools.impl.PoolDispatcherLifecycleTest.failure;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceException.Kind;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.TestWorker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A worker that answers a batch with an INTERNAL {@link InferenceException} (the model failed the batch
 * and said so, e.g. a Python predict that raised): the batch fails with it, nothing is re-queued, and the
 * worker stays in rotation.
 */
class PoolDispatcherModelErrorTest {

  private final DispatcherHarness h = new DispatcherHarness(
      PoolConfig.builder().maxBatchSize(2).maxBatchDelay(Duration.ofMillis(10)).maxQueued(8).build());

  @AfterEach
  void close() {
    h.close();
  }

  @Test
  void aModelErrorFailsItsBatchOnlyAndTheWorkerServesTheNext() {
    TestWorker w = h.addWorker("w");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    assertThat(w.lastCall().ids()).containsExactly("a", "b");

    w.lastCall().fail(new CompletionException(new InferenceException(Kind.INTERNAL,
        "model m: predict raised ValueError: bad")));
    failure(a, Kind.INTERNAL).extracting(Throwable::getMessage).isEqualTo("model m: predict raised ValueError: bad");
    failure(b, Kind.INTERNAL);
    assertThat(h.failures).as("not a failed worker").isEmpty();
    assertThat(h.stats()).extracting("requeued", "failed", "idleWorkers", "failedWorkers").containsExactly(0L, 2L, 1, 0);
    assertThat(h.outcomes("failed")).isEqualTo(2);

    CompletableFuture<List<Tensor>> c = h.submit("c", 2);
    assertThat(w.lastCall().ids()).containsExactly("c");
    w.lastCall().succeed();
    assertThat(c).isCompleted();
  }
}
