package io.kiln.pools.impl;

import static io.kiln.pools.impl.PoolDispatcherLifecycleTest.failure;
import static io.kiln.pools.testing.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceException.Kind;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.TestWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PoolDispatcherFailureTest {

  private static final Duration DELAY = Duration.ofMillis(10);

  private DispatcherHarness h = new DispatcherHarness(
      PoolConfig.builder().maxBatchSize(2).maxBatchDelay(DELAY).maxQueued(8).build());

  @AfterEach
  void close() {
    h.close();
  }

  @Test
  void aFailedWorkersBatchIsRequeuedOnceEachRequestAloneThenFails() {
    TestWorker w1 = h.addWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    assertThat(w2.lastCall().ids()).containsExactly("a", "b");

    RuntimeException boom = new RuntimeException("CUDA error: device lost");
    w2.lastCall().fail(new CompletionException(boom));
    assertThat(h.failures).containsExactly(Map.entry("w2", boom));
    assertThat(w1.lastCall().ids()).as("re-queued at once, alone, onto the other worker").containsExactly("a");
    assertThat(h.stats()).extracting("requeued", "queueDepth", "busyWorkers", "idleWorkers", "totalWorkers",
        "failedWorkers").containsExactly(2L, 1, 1, 0, 2, 1);
    assertThat(a).isNotDone();

    w1.lastCall().fail(new IllegalStateException("out of memory"));
    failure(a, Kind.UNAVAILABLE).extracting(Throwable::getMessage).isEqualTo("worker w1 failed: out of memory");
    assertThat(b).as("still queued for its one retry").isNotDone();
    assertThat(h.failures).extracting(Map.Entry::getKey).containsExactly("w2", "w1");
    assertThat(w2.calls()).as("never back to the failed worker").hasSize(1);

    TestWorker w3 = h.addWorker("w3");
    assertThat(w3.lastCall().ids()).containsExactly("b");
    w3.lastCall().fail(new RuntimeException("died"));
    failure(b, Kind.UNAVAILABLE).extracting(Throwable::getMessage).isEqualTo("worker w3 failed: died");
    assertThat(h.stats()).extracting("failed", "requeued", "failedWorkers").containsExactly(2L, 2L, 3);
    assertThat(h.outcomes("failed")).isEqualTo(2);
  }

  @Test
  void aPoisonRequestFailsAloneOnItsRetryAndItsBatchMatesAreAnswered() {
    List<TestWorker> restarted = new ArrayList<>();
    h.onFailure = (id, cause) -> restarted.add(h.addWorker(id));
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    CompletableFuture<List<Tensor>> poison = h.submit("poison", 1);
    CompletableFuture<List<Tensor>> c = h.submit("c", 1);
    assertThat(w.lastCall().ids()).containsExactly("a", "poison");

    w.lastCall().fail(new RuntimeException("crashed on NaN"));
    TestWorker second = restarted.get(0);
    assertThat(second.lastCall().ids()).containsExactly("a");
    second.lastCall().succeed();
    assertThat(second.lastCall().ids()).as("the retry goes before newer requests, and alone").containsExactly("poison");
    second.lastCall().fail(new RuntimeException("crashed on NaN"));
    failure(poison, Kind.UNAVAILABLE);

    TestWorker third = restarted.get(1);
    h.clock.advance(DELAY);
    assertThat(third.lastCall().ids()).containsExactly("c");
    third.lastCall().succeed();
    assertThat(a).isCompleted();
    assertThat(c).isCompleted();
    assertThat(h.stats()).extracting("completed", "failed", "requeued").containsExactly(2L, 1L, 2L);
  }

  @Test
  void requeuedRequestsGoAheadOfNewerOnes() {
    TestWorker w = h.addWorker("w1");
    h.submit("a", 1);
    h.submit("b", 1);
    h.submit("c", 1);
    w.lastCall().fail(new RuntimeException("died"));
    h.dispatcher.removeWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    assertThat(w2.lastCall().ids()).containsExactly("a");
    w2.lastCall().succeed();
    assertThat(w2.lastCall().ids()).containsExactly("b");
    w2.lastCall().succeed();
    h.clock.advance(DELAY);
    assertThat(w2.lastCall().ids()).containsExactly("c");
  }

  @Test
  void withZeroRequeuesAWorkerFailureFailsTheBatchAtOnce() {
    h.close();
    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(2).maxRequeues(0).build());
    TestWorker w1 = h.addWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    CompletableFuture<List<Tensor>> a = h.submit("a", 2);
    w2.running().fail(new RuntimeException("x"));
    failure(a, Kind.UNAVAILABLE);
    assertThat(w1.calls()).isEmpty();
    assertThat(h.stats().requeued()).isZero();
  }

  @Test
  void invalidInputFromTheWorkerFailsTheRequestsWithoutRetryAndKeepsTheWorker() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    InferenceException bad = InferenceException.invalid("input 'x' must have 64 columns");
    w.lastCall().fail(new CompletionException(bad));
    failure(a).isSameAs(bad);
    failure(b).isSameAs(bad);
    assertThat(h.failures).isEmpty();
    assertThat(h.stats()).extracting("invalid", "requeued", "idleWorkers").containsExactly(2L, 0L, 1);
    assertThat(h.outcomes("invalid")).isEqualTo(2);
    h.submit("c", 2);
    assertThat(w.lastCall().ids()).containsExactly("c");
  }

  @Test
  void otherInferenceExceptionsCountAsWorkerFailures() {
    TestWorker w = h.addWorker("w1");
    h.submit("a", 2);
    w.lastCall().fail(InferenceException.unavailable("actor died"));
    assertThat(h.failures).extracting(Map.Entry::getKey).containsExactly("w1");
    assertThat(h.stats().requeued()).isEqualTo(1);
  }

  @Test
  void aWrongNumberOfResultsIsAWorkerFailure() {
    TestWorker w1 = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    h.submit("b", 1);
    w1.lastCall().future().complete(List.of(TestWorker.echo(request("a", 1))));
    assertThat(a).isNotDone();
    assertThat(h.failures).singleElement().satisfies(e -> assertThat(e.getValue()).hasMessageContaining("1 results for 2"));
  }

  @Test
  void theListenerMayRestartTheWorkerInline() {
    List<TestWorker> restarted = new ArrayList<>();
    h.onFailure = (id, cause) -> restarted.add(h.addWorker(id));
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 2);
    w.lastCall().fail(new RuntimeException("died"));
    assertThat(restarted).singleElement().satisfies(r -> assertThat(r.running().ids()).containsExactly("a"));
    restarted.get(0).running().succeed();
    assertThat(a).isCompleted();
    assertThat(h.stats()).extracting("totalWorkers", "idleWorkers", "failedWorkers").containsExactly(1, 1, 0);
  }

  @Test
  void theListenerMayRemoveTheFailedWorker() {
    h.onFailure = (id, cause) -> h.dispatcher.removeWorker(id);
    TestWorker w = h.addWorker("w1");
    h.submit("a", 2);
    w.lastCall().fail(new RuntimeException("died"));
    assertThat(h.stats()).extracting("totalWorkers", "queueDepth").containsExactly(0, 1);
  }

  @Test
  void aBusyWorkerBeingRemovedFinishesItsBatchAndIsNotUsedAgain() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 2);
    h.dispatcher.removeWorker("w1");
    assertThat(h.stats()).extracting("busyWorkers", "totalWorkers").containsExactly(1, 1);
    h.submit("b", 2);
    w.lastCall().succeed();
    assertThat(a).isCompleted();
    assertThat(w.calls()).hasSize(1);
    assertThat(h.stats()).extracting("busyWorkers", "totalWorkers", "queueDepth").containsExactly(0, 0, 1);
  }

  @Test
  void aRemovedWorkerThatFailsRequeuesButIsNotReported() {
    TestWorker w = h.addWorker("w1");
    h.submit("a", 2);
    h.dispatcher.removeWorker("w1");
    w.lastCall().fail(new RuntimeException("killed"));
    assertThat(h.failures).isEmpty();
    assertThat(h.stats()).extracting("queueDepth", "requeued", "totalWorkers").containsExactly(1, 1L, 0);
  }

  @Test
  void withTheLastWorkerGoneRequestsWaitForANewOneUntilTheirDeadline() {
    TestWorker w = h.addWorker("w1");
    h.dispatcher.removeWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 2, Duration.ofSeconds(1));
    CompletableFuture<List<Tensor>> b = h.submit("b", 2, Duration.ofSeconds(3));
    h.clock.advanceMillis(1000);
    failure(a, Kind.DEADLINE_EXCEEDED);
    assertThat(b).isNotDone();
    TestWorker w2 = h.addWorker("w2");
    assertThat(w2.lastCall().ids()).containsExactly("b");
    assertThat(w.calls()).isEmpty();
  }

  @Test
  void aWorkerThrowingFromInferIsAFailedWorker() {
    h.dispatcher.addWorker(new WorkerChannel() {
      @Override
      public String id() {
        return "thrower";
      }

      @Override
      public java.util.concurrent.CompletionStage<List<List<Tensor>>> infer(List<io.kiln.pools.InferenceRequest> batch,
          List<io.kiln.pools.trace.RequestTrace> traces) {
        throw new IllegalStateException("mailbox closed");
      }
    });
    CompletableFuture<List<Tensor>> a = h.submit("a", 2);
    assertThat(h.failures).singleElement().satisfies(e -> assertThat(e.getValue()).hasMessage("mailbox closed"));
    assertThat(a).isNotDone();
    h.dispatcher.removeWorker("thrower");
    assertThat(h.stats().totalWorkers()).isZero();
  }

  @Test
  void aRequeueThatFindsTheQueueFullFailsInsteadOfOverfillingIt() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 2);
    for (int i = 0; i < 8; i++) {
      h.submit("q" + i, 1);
    }
    w.lastCall().fail(new RuntimeException("died"));
    failure(a, Kind.UNAVAILABLE).extracting(Throwable::getMessage).isEqualTo("worker w1 failed: died");
    assertThat(h.stats()).extracting("queueDepth", "requeued", "failed").containsExactly(8, 0L, 1L);
  }

  @Test
  void resultListsAreCheckedForNulls() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    w.lastCall().future().complete(List.of(TestWorker.echo(request("a", 1)), TestWorker.echo(request("b", 1))));
    assertThat(a).isCompletedWithValue(TestWorker.echo(request("a", 1)));
    assertThat(b).isCompleted();

    h.submit("c", 1);
    h.submit("d", 1);
    w.lastCall().future().complete(java.util.Arrays.asList(TestWorker.echo(request("c", 1)), null));
    assertThat(h.failures).singleElement().satisfies(e -> assertThat(e.getValue()).hasMessageContaining("null result"));
  }
}
