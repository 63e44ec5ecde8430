package io.kiln.pools.impl;

import static io.kiln.pools.testing.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.Cancellation;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceException.Kind;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.TestWorker;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.assertj.core.api.ObjectAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PoolDispatcherLifecycleTest {

  private static final Duration DELAY = Duration.ofMillis(10);
  private static final PoolConfig CONFIG = PoolConfig.builder().maxBatchSize(4).maxBatchDelay(DELAY).maxQueued(8).build();

  private DispatcherHarness h = new DispatcherHarness(CONFIG);

  @AfterEach
  void close() {
    h.close();
  }

  static ObjectAssert<InferenceException> failure(CompletableFuture<?> f) {
    assertThat(f).isCompletedExceptionally();
    Throwable t = f.handle((v, e) -> e).join();
    return assertThat(t).asInstanceOf(InstanceOfAssertFactories.type(InferenceException.class));
  }

  static ObjectAssert<InferenceException> failure(CompletableFuture<?> f, Kind kind) {
    ObjectAssert<InferenceException> a = failure(f);
    a.extracting(InferenceException::kind).isEqualTo(kind);
    return a;
  }

  @Test
  void deadlineIsAnsweredAtTheDeadlineWithoutAnyWorker() {
    CompletableFuture<List<Tensor>> f = h.submit("a", 1, Duration.ofMillis(50));
    h.clock.advanceNanos(Duration.ofMillis(50).toNanos() - 1);
    assertThat(f).isNotDone();
    h.clock.advanceNanos(1);
    failure(f, Kind.DEADLINE_EXCEEDED).extracting(Throwable::getMessage).asString().contains("queued");
    assertThat(h.stats()).extracting("queueDepth", "expired").containsExactly(0, 1L);
    assertThat(h.outcomes("expired")).isEqualTo(1);
  }

  @Test
  void aRequestPastItsDeadlineIsAnsweredAtOnce() {
    CompletableFuture<List<Tensor>> f = h.dispatcher.submit(request("a", 1), h.clock.getAsLong());
    failure(f, Kind.DEADLINE_EXCEEDED);
    assertThat(h.stats()).extracting("queueDepth", "expired").containsExactly(0, 1L);
  }

  @Test
  void anExpiredRequestIsNeverDispatchedEvenWhenItsTimerIsLate() {
    TestWorker w = h.addWorker("w1");
    h.submit("busy", 4);
    CompletableFuture<List<Tensor>> late = h.submit("late", 1, Duration.ofMillis(20));
    CompletableFuture<List<Tensor>> ok = h.submit("ok", 1);
    h.clock.advanceLate(Duration.ofMillis(30));
    w.lastCall().succeed();
    assertThat(w.lastCall().ids()).containsExactly("ok");
    failure(late, Kind.DEADLINE_EXCEEDED);
    h.clock.fireDue();
    assertThat(h.stats().expired()).isEqualTo(1);
    assertThat(ok).isNotDone();
  }

  @Test
  void aRequestWhoseDeadlineFallsWithTheBatchDelayIsNotDispatched() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> f = h.submit("a", 1, DELAY);
    h.clock.advance(DELAY);
    failure(f, Kind.DEADLINE_EXCEEDED);
    assertThat(w.calls()).isEmpty();
  }

  @Test
  void anExecutingRequestIsAnsweredAtItsDeadlineAndTheLateResultIgnored() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> f = h.submit("a", 4, Duration.ofMillis(100));
    h.clock.advanceMillis(100);
    failure(f, Kind.DEADLINE_EXCEEDED).extracting(Throwable::getMessage).asString().contains("executing");
    assertThat(h.stats()).extracting("inFlightRequests", "busyWorkers").containsExactly(1, 1);
    w.lastCall().succeed();
    assertThat(h.stats()).extracting("inFlightRequests", "idleWorkers", "completed", "expired").containsExactly(0, 1, 0L, 1L);
  }

  @Test
  void queueCapRejectsWithCapacityExceededAndAtLeastOneSecondRetryAfter() {
    for (int i = 0; i < 8; i++) {
      h.submit("r" + i, 1);
    }
    CompletableFuture<List<Tensor>> f = h.submit("over", 1);
    failure(f, Kind.UNAVAILABLE).isInstanceOf(CapacityExceededException.class)
        .extracting(e -> ((CapacityExceededException) e).retryAfter())
        .as("nothing completed lately: the maximum").isEqualTo(Duration.ofSeconds(Throughput.MAX_RETRY_AFTER_S));
    assertThat(h.stats()).extracting("queueDepth", "rejected").containsExactly(8, 1L);
    assertThat(h.outcomes("rejected")).isEqualTo(1);
  }

  @Test
  void theStatsAfterARefusalShowTheFullQueueBeforeTheTurnEnds() {
    List<Runnable> turnEnds = new ArrayList<>();
    h.dispatcher.dispatchAtTurnEnd(turnEnds::add); // the loop's turn has not ended: nothing published there yet
    for (int i = 0; i < 8; i++) {
      h.submit("r" + i, 1);
    }
    failure(h.submit("over", 1), Kind.UNAVAILABLE).isInstanceOf(CapacityExceededException.class);
    assertThat(turnEnds).hasSize(1);
    assertThat(h.stats()).extracting("queueDepth", "rejected").containsExactly(8, 1L);
  }

  @Test
  void retryAfterFollowsRecentThroughput() {
    h.close();
    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(1).maxBatchDelay(Duration.ZERO).maxQueued(20).build());
    TestWorker w = h.addWorker("w1");
    // 10 requests a second for 30 s: the estimate settles near 10/s.
    for (int i = 0; i < 300; i++) {
      h.submit("r" + i, 1);
      h.clock.advanceMillis(100);
      w.lastCall().succeed();
    }
    h.submit("busy", 1);
    for (int i = 0; i < 20; i++) {
      h.submit("q" + i, 1);
    }
    Duration retryAfter = retryAfterOf(h.submit("over", 1));
    assertThat(retryAfter).as("20 queued at ~10/s").isEqualTo(Duration.ofSeconds(2));

    h.clock.advance(Duration.ofSeconds(10));
    assertThat(retryAfterOf(h.submit("later", 1))).as("the rate decays while nothing completes")
        .isEqualTo(Duration.ofSeconds(15));
  }

  private static Duration retryAfterOf(CompletableFuture<?> f) {
    if (!f.isCompletedExceptionally()) {
      return null;
    }
    try {
      f.get();
      return null;
    } catch (ExecutionException e) {
      return ((CapacityExceededException) e.getCause()).retryAfter();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void retryAfterIsAtLeastOneSecond() {
    h.close();
    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(1000).maxBatchDelay(Duration.ZERO).maxQueued(1).build());
    TestWorker w = h.addWorker("w1");
    for (int i = 0; i < 50; i++) {
      h.submit("r" + i, 1000);
      h.clock.advanceMillis(1);
      w.lastCall().succeed();
    }
    h.submit("busy", 1);
    h.submit("queued", 1);
    assertThat(retryAfterOf(h.submit("over", 1))).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void cancellingRemovesTheRequestFromTheQueueAndItNeverRuns() {
    Cancellation token = Cancellation.create();
    CompletableFuture<List<Tensor>> a = h.submit("a", 1, token);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    assertThat(token.cancel("client went away")).isTrue();
    assertThat(a).isCompletedExceptionally();
    assertThat(h.stats().failed()).as("a withdrawal is no error of the model").isZero();
    assertThat(h.stats()).extracting("queueDepth", "cancelled").containsExactly(1, 1L);
    TestWorker w = h.addWorker("w1");
    h.clock.advance(DELAY);
    assertThat(w.calls()).singleElement().extracting(TestWorker.Call::ids).isEqualTo(List.of("b"));
    w.lastCall().succeed();
    assertThat(b).isCompleted();
    assertThat(h.outcomes("cancelled")).isEqualTo(1);
    h.clock.advance(PoolConfig.DEFAULT_TIMEOUT); // the deadline timer, left armed, fires once more and stops
    assertThat(h.clock.pendingTimers()).as("no deadline timer left behind").isZero();
    assertThat(h.outcomes("cancelled")).isEqualTo(1);
  }

  @Test
  void aCancellationNotYetHandedOverStillKeepsTheRequestFromRunning() {
    h.close();
    ArrayDeque<Runnable> loop = new ArrayDeque<>();
    h = new DispatcherHarness(CONFIG, new ManualClock(), loop::add);
    Cancellation token = Cancellation.create();
    CompletableFuture<List<Tensor>> a = h.submit("a", 1, token);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    token.cancel("client went away"); // as if from the gateway's thread: handed over through the executor, not run yet
    assertThat(loop).hasSize(1);
    TestWorker w = h.addWorker("w1");
    h.clock.advance(DELAY);
    assertThat(w.lastCall().ids()).containsExactly("b");
    loop.forEach(Runnable::run);
    assertThat(h.stats()).extracting("queueDepth", "cancelled", "inFlightRequests").containsExactly(0, 1L, 1);
    assertThat(b).isNotDone();
  }

  @Test
  void cancellingAnExecutingRequestLetsTheBatchFinish() {
    TestWorker w = h.addWorker("w1");
    Cancellation token = Cancellation.create();
    CompletableFuture<List<Tensor>> a = h.submit("a", 2, token);
    CompletableFuture<List<Tensor>> b = h.submit("b", 2);
    token.cancel("client went away");
    w.lastCall().succeed();
    assertThat(a).isCompletedExceptionally();
    assertThat(b).isCompletedWithValue(TestWorker.echo(request("b", 2)));
    assertThat(h.stats()).extracting("completed", "cancelled").containsExactly(1L, 1L);
  }

  @Test
  void drainRefusesNewWorkFlushesPartialBatchesAndCompletesWhenIdle() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 4);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    CompletableFuture<Void> drained = h.dispatcher.drain().toCompletableFuture();
    assertThat(drained).isNotDone();
    failure(h.submit("late", 1), Kind.UNAVAILABLE).extracting(Throwable::getMessage).asString().contains("draining");
    w.lastCall().succeed();
    assertThat(w.lastCall().ids()).as("no batch delay while draining").containsExactly("b");
    assertThat(drained).isNotDone();
    w.lastCall().succeed();
    assertThat(drained).isCompleted();
    assertThat(a).isCompleted();
    assertThat(b).isCompleted();
    assertThat(h.stats()).extracting("completed", "rejected").containsExactly(2L, 1L);
    assertThat(h.dispatcher.drain().toCompletableFuture()).isCompleted();
  }

  @Test
  void drainOfAnIdlePoolCompletesAtOnce() {
    assertThat(h.dispatcher.drain().toCompletableFuture()).isCompleted();
  }

  @Test
  void drainWithoutWorkersWaitsForDeadlines() {
    CompletableFuture<List<Tensor>> a = h.submit("a", 1, Duration.ofSeconds(1));
    CompletableFuture<Void> drained = h.dispatcher.drain().toCompletableFuture();
    h.clock.advanceMillis(999);
    assertThat(drained).isNotDone();
    h.clock.advanceMillis(1);
    failure(a, Kind.DEADLINE_EXCEEDED);
    assertThat(drained).isCompleted();
  }

  @Test
  void closeFailsOutstandingWorkIgnoresLateAnswersAndRemovesMeters() {
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 4);
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    CompletableFuture<Void> drained = h.dispatcher.drain().toCompletableFuture();
    assertThat(h.registry.find("kiln.pool.queue.depth").gauge()).isNotNull();
    h.dispatcher.close();
    failure(a, Kind.UNAVAILABLE).extracting(Throwable::getMessage).isEqualTo("pool is closed");
    failure(b, Kind.UNAVAILABLE);
    assertThat(drained).isCompletedExceptionally();
    assertThat(h.registry.getMeters()).isEmpty();
    assertThat(h.clock.pendingTimers()).isZero();
    w.lastCall().succeed();
    failure(h.submit("after", 1), Kind.UNAVAILABLE);
    h.dispatcher.addWorker(new TestWorker("w2"));
    assertThat(h.stats()).extracting("totalWorkers", "queueDepth", "inFlightRequests", "failed").containsExactly(0, 0, 0, 2L);
    h.dispatcher.close();
  }

  @Test
  void requestsThatCannotBeBatchedAreInvalid() {
    InferenceRequest noInputs = new InferenceRequest("n", List.of(), List.of(), Map.of());
    InferenceRequest ragged = new InferenceRequest("r", List.of(request("a", 2).inputs().get(0),
        request("b", 3).inputs().get(0).withName("y")), List.of(), Map.of());
    failure(h.submit(noInputs), Kind.INVALID_INPUT).extracting(Throwable::getMessage).asString().contains("no inputs");
    failure(h.submit(ragged), Kind.INVALID_INPUT).extracting(Throwable::getMessage).asString().contains("disagree");
    InferenceRequest empty = new InferenceRequest("e", List.of(new Tensor("x", io.kiln.pools.DataType.FP32, new long[] {0, 2},
        new byte[0])), List.of(), Map.of());
    failure(h.submit(empty), Kind.INVALID_INPUT).extracting(Throwable::getMessage).asString()
        .contains("input 'x' has no rows (first dimension is 0)");
    assertThat(h.stats().invalid()).isEqualTo(3);
    assertThat(h.outcomes("invalid")).isEqualTo(3);
  }

  @Test
  void addingAWorkerTwiceIsAnError() {
    h.addWorker("w1");
    assertThatThrownBy(() -> h.addWorker("w1")).isInstanceOf(IllegalStateException.class).hasMessageContaining("w1");
  }

  @Test
  void deadlinesSurviveClockOverflow() {
    h.close();
    h = new DispatcherHarness(CONFIG, new ManualClock(Long.MAX_VALUE - Duration.ofMillis(5).toNanos()), Runnable::run);
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1, Duration.ofMillis(50));
    h.clock.advance(DELAY.minusNanos(1));
    assertThat(w.calls()).isEmpty();
    h.clock.advanceNanos(1);
    assertThat(w.lastCall().ids()).containsExactly("a");
    h.clock.advanceMillis(39);
    assertThat(a).isNotDone();
    h.clock.advanceMillis(1);
    failure(a, Kind.DEADLINE_EXCEEDED);
  }

  @Test
  void aWorkerAnsweringWithNullIsAFailedWorkerNotAHang() {
    h.dispatcher.addWorker(new WorkerChannel() {
      @Override
      public String id() {
        return "broken";
      }

      @Override
      public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch,
                                                        List<io.kiln.pools.trace.RequestTrace> traces) {
        return null;
      }
    });
    CompletableFuture<List<Tensor>> a = h.submit("a", 4);
    assertThat(h.failures).extracting(Map.Entry::getKey).containsExactly("broken");
    assertThat(h.stats()).extracting("queueDepth", "requeued", "idleWorkers", "totalWorkers").containsExactly(1, 1L, 0, 1);
    TestWorker w = h.addWorker("w1");
    assertThat(w.lastCall().ids()).containsExactly("a");
    w.lastCall().succeed();
    assertThat(a).isCompleted();
  }
}
