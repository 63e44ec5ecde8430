package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.Cancellation;
import io.kiln.pools.InferenceException;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.Requests;
import io.kiln.pools.testing.TestWorker;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link EarlyAnswer}: a request's outputs go to it on the thread its worker answered on, before the batch's
 * bookkeeping reaches the dispatcher's thread; the request is claimed there, so it ends once and is counted once
 * however a deadline, a cancel or the bookkeeping races it. The dispatcher's thread is a queue the test drains.
 */
class PoolDispatcherEarlyAnswerTest {

  private final ArrayDeque<Runnable> dispatcherThread = new ArrayDeque<>();
  private final ManualClock clock = new ManualClock();
  private final DispatcherHarness h = new DispatcherHarness(
      PoolConfig.builder().maxBatchSize(2).maxBatchDelay(Duration.ofMillis(10)).maxQueued(8).build(), clock,
      dispatcherThread::add);
  private final List<String> answered = new ArrayList<>();
  private final List<long[]> times = new ArrayList<>();

  @AfterEach
  void close() {
    h.close();
    drain();
  }

  private void drain() {
    for (Runnable r = dispatcherThread.poll(); r != null; r = dispatcherThread.poll()) {
      r.run();
    }
  }

  private CompletableFuture<List<Tensor>> submit(String id, Duration timeout, Cancellation token) {
    EarlyAnswer early = (out, dispatched, at) -> {
      answered.add(id + ":" + out.get(0).name());
      times.add(new long[] {dispatched, at});
    };
    return h.dispatcher.submit(Requests.request(id, 1), RequestContext.of(id, clock.getAsLong() + timeout.toNanos(),
        null, RequestContext.Priority.NORMAL, token), false, null, null, false, early);
  }

  @Test
  void theAnswerGoesOutOnTheWorkersThreadBeforeTheDispatcherHearsOfTheBatch() {
    TestWorker w = h.addWorker("w");
    CompletableFuture<List<Tensor>> a = submit("a", Duration.ofSeconds(5), Cancellation.NONE);
    CompletableFuture<List<Tensor>> b = submit("b", Duration.ofSeconds(5), Cancellation.NONE);
    assertThat(w.lastCall().ids()).containsExactly("a", "b");
    long dispatched = clock.getAsLong();
    clock.advanceMillis(3);

    w.lastCall().succeed();

    assertThat(answered).containsExactly("a:out-x", "b:out-x");
    assertThat(times).allSatisfy(t -> assertThat(t).containsExactly(dispatched, dispatched + 3_000_000));
    assertThat(a).as("the dispatcher's own completion waits for its thread").isNotDone();
    assertThat(h.stats().completed()).isZero();
    assertThat(h.stats().busyWorkers()).isEqualTo(1);

    drain();
    assertThat(a.join().get(0).name()).isEqualTo("out-x");
    assertThat(b).isCompleted();
    assertThat(h.stats()).extracting("completed", "busyWorkers", "idleWorkers").containsExactly(2L, 0, 1);
    assertThat(h.outcomes("ok")).isEqualTo(2);
  }

  @Test
  void aDeadlineThatPassesAfterTheEarlyAnswerCountsTheRequestAnsweredNotExpired() {
    TestWorker w = h.addWorker("w");
    CompletableFuture<List<Tensor>> a = submit("a", Duration.ofMillis(100), Cancellation.NONE);
    clock.advanceMillis(10); // alone: it goes when the batch delay is up
    w.lastCall().succeed();
    assertThat(answered).containsExactly("a:out-x");

    clock.advance(Duration.ofMillis(150)); // the deadline sweep runs on the dispatcher's thread before the bookkeeping
    drain();

    assertThat(h.outcomes("ok")).isEqualTo(1);
    assertThat(h.outcomes("expired")).isZero();
    assertThat(h.stats()).extracting("completed", "expired").containsExactly(1L, 0L);
    assertThat(a).isDone();
  }

  @Test
  void aRequestCancelledBeforeItsWorkerAnsweredIsNeverAnsweredEarly() {
    TestWorker w = h.addWorker("w");
    Cancellation token = Cancellation.create();
    CompletableFuture<List<Tensor>> a = submit("a", Duration.ofSeconds(5), token);
    CompletableFuture<List<Tensor>> b = submit("b", Duration.ofSeconds(5), Cancellation.NONE);
    token.cancel("client went away"); // its withdrawal waits on the dispatcher's thread
    w.lastCall().succeed();

    assertThat(answered).containsExactly("b:out-x");
    drain();
    assertThat(a).isCompletedExceptionally();
    assertThat(a.handle((v, e) -> e.getCause() != null ? e.getCause() : e).join())
        .isInstanceOf(InferenceException.class).hasMessageContaining("request cancelled: client went away");
    assertThat(h.outcomes("cancelled")).isEqualTo(1);
    assertThat(h.outcomes("ok")).isEqualTo(1);
    assertThat(b).isCompleted();
  }

  @Test
  void aFailedBatchIsNeverAnsweredEarlyAndItsRequestsAreRequeued() {
    TestWorker w = h.addWorker("w");
    h.onFailure = (id, cause) -> { };
    CompletableFuture<List<Tensor>> a = submit("a", Duration.ofSeconds(5), Cancellation.NONE);
    clock.advanceMillis(10);
    w.lastCall().fail(new IllegalStateException("worker died"));
    assertThat(answered).isEmpty();
    drain();
    assertThat(h.stats().requeued()).isEqualTo(1);
    assertThat(a).isNotDone();
    TestWorker again = h.addWorker("w2");
    drain();
    again.lastCall().succeed();
    assertThat(answered).containsExactly("a:out-x");
    drain();
    assertThat(a).isCompleted();
  }

  @Test
  void whenTheDispatchersThreadSettlesFirstTheEarlyAnswerStandsDown() {
    DispatcherHarness inline = new DispatcherHarness(PoolConfig.builder().maxBatchSize(1).build());
    try {
      TestWorker w = inline.addWorker("w");
      List<String> early = new ArrayList<>();
      CompletableFuture<List<Tensor>> a = inline.dispatcher.submit(Requests.request("a", 1), RequestContext.of("a",
          inline.clock.getAsLong() + Duration.ofSeconds(5).toNanos()), false, null, null, false,
          (out, d, at) -> early.add("a"));
      w.lastCall().succeed(); // the direct executor runs the bookkeeping at once, before the early answer

      assertThat(a).isCompleted();
      assertThat(early).isEmpty();
      assertThat(inline.outcomes("ok")).isEqualTo(1);
    } finally {
      inline.close();
    }
  }
}
