package io.kiln.pools.impl;

import static io.kiln.pools.testing.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.Cancellation;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.Requests;
import io.kiln.pools.testing.TestWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PoolDispatcherBatchingTest {

  private static final Duration DELAY = Duration.ofMillis(10);

  private DispatcherHarness h;

  private DispatcherHarness harness(int maxBatchSize, Duration delay) {
    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(maxBatchSize).maxBatchDelay(delay).build());
    return h;
  }

  @AfterEach
  void close() {
    if (h != null) {
      h.close();
    }
  }

  @Test
  void fullBatchIsDispatchedAtOnce() {
    harness(4, DELAY);
    TestWorker w = h.addWorker("w1");
    for (int i = 0; i < 3; i++) {
      h.submit("r" + i, 1);
    }
    assertThat(w.calls()).isEmpty();
    h.submit("r3", 1);
    assertThat(w.calls()).hasSize(1);
    assertThat(w.lastCall().ids()).containsExactly("r0", "r1", "r2", "r3");
    assertThat(h.clock.elapsedNanos()).isZero();
  }

  @Test
  void partialBatchWaitsExactlyMaxBatchDelayFromTheOldestRequest() {
    harness(8, DELAY);
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    h.clock.advanceMillis(6);
    h.submit("b", 2);
    h.clock.advanceNanos(DELAY.toNanos() - 6_000_000 - 1);
    assertThat(w.calls()).isEmpty();
    h.clock.advanceNanos(1);
    assertThat(w.calls()).hasSize(1);
    assertThat(w.lastCall().ids()).containsExactly("a", "b");

    w.lastCall().succeed();
    assertThat(a).isCompletedWithValue(TestWorker.echo(request("a", 1)));
    h.clock.advance(PoolConfig.DEFAULT_TIMEOUT); // the deadline timer, left armed, fires once more and stops
    assertThat(h.clock.pendingTimers()).as("no batch or deadline timer left behind").isZero();
  }

  @Test
  void zeroDelayDispatchesAtOnceAndTakesWhatQueuedWhileBusy() {
    harness(8, Duration.ZERO);
    TestWorker w = h.addWorker("w1");
    h.submit("a", 1);
    assertThat(w.calls()).hasSize(1);
    h.submit("b", 1);
    h.submit("c", 3);
    assertThat(w.calls()).hasSize(1);
    w.lastCall().succeed();
    assertThat(w.calls()).hasSize(2);
    assertThat(w.lastCall().ids()).containsExactly("b", "c");
  }

  @Test
  void aRequestThatWaitedWhileWorkersWereBusyGoesAsSoonAsOneFreesUp() {
    harness(8, DELAY);
    TestWorker w = h.addWorker("w1");
    h.submit("a", 8);
    h.submit("b", 1);
    h.clock.advance(DELAY.multipliedBy(3));
    assertThat(w.calls()).hasSize(1);
    w.lastCall().succeed();
    assertThat(w.calls()).hasSize(2);
    assertThat(w.lastCall().ids()).containsExactly("b");
  }

  @Test
  void rowsAreCountedAlongTheFirstDimensionOverRequests() {
    harness(8, DELAY);
    TestWorker w = h.addWorker("w1");
    h.submit("a", 3);
    h.submit("b", 3);
    assertThat(w.calls()).as("6 of 8 rows").isEmpty();
    h.submit("c", 2);
    assertThat(w.calls()).hasSize(1);
    assertThat(w.lastCall().rows()).isEqualTo(8);
  }

  @Test
  void batchStopsBeforeARequestThatWouldOverflowIt() {
    harness(8, DELAY);
    TestWorker w = h.addWorker("w1");
    h.submit("a", 3);
    h.submit("b", 3);
    h.submit("c", 3);
    assertThat(w.lastCall().ids()).containsExactly("a", "b");
    assertThat(h.stats().queueDepth()).isEqualTo(1);
    h.submit("d", 1);
    w.lastCall().succeed();
    h.clock.advance(DELAY);
    assertThat(w.lastCall().ids()).as("c keeps its place ahead of d").containsExactly("c", "d");
  }

  @Test
  void oversizeRequestIsDispatchedAlone() {
    harness(4, DELAY);
    TestWorker w1 = h.addWorker("w1");
    h.submit("big", 10);
    assertThat(w1.calls()).hasSize(1);
    assertThat(w1.lastCall().ids()).containsExactly("big");

    TestWorker w2 = h.addWorker("w2");
    h.submit("small", 1);
    h.submit("big2", 10);
    assertThat(w2.lastCall().ids()).as("the small head goes without the big one").containsExactly("small");
    w1.lastCall().succeed();
    assertThat(w1.lastCall().ids()).containsExactly("big2");
  }

  @Test
  void incompatibleRequestsAreNotMixedAndKeepTheirOrder() {
    harness(8, DELAY);
    TestWorker w = h.addWorker("w1");
    h.submit(request("a", 1, 4));
    h.submit(request("b", 1, 8));
    h.submit(request("c", 1, 4));
    h.submit(request("d", 1, 8));
    h.submit(request("e", 1, 4));
    h.clock.advance(DELAY);
    assertThat(w.lastCall().ids()).containsExactly("a", "c", "e");
    w.lastCall().succeed();
    assertThat(w.lastCall().ids()).as("b waited its delay already").containsExactly("b", "d");
  }

  @Test
  void datatypesAndRequestedOutputsSeparateBatches() {
    harness(8, DELAY);
    TestWorker w = h.addWorker("w1");
    h.submit(Requests.typed("fp32", 1, DataType.FP32));
    h.submit(Requests.typed("fp16", 1, DataType.FP16));
    h.submit(Requests.withOutputs("y", 1, "y"));
    h.submit(Requests.withOutputs("all", 1));
    h.clock.advance(DELAY);
    assertThat(w.lastCall().ids()).containsExactly("fp32", "all");
    w.lastCall().succeed();
    assertThat(w.lastCall().ids()).containsExactly("fp16");
    w.lastCall().succeed();
    assertThat(w.lastCall().ids()).containsExactly("y");
  }

  @Test
  void fullBatchOfAnotherShapeDoesNotOvertakeTheHead() {
    harness(2, DELAY);
    TestWorker w = h.addWorker("w1");
    h.submit(request("a", 1, 4));
    h.submit(request("b", 1, 8));
    h.submit(request("c", 1, 8));
    assertThat(w.calls()).as("FIFO: the head's batch goes first, after its delay").isEmpty();
    h.clock.advance(DELAY);
    assertThat(w.lastCall().ids()).containsExactly("a");
    w.lastCall().succeed();
    assertThat(w.lastCall().ids()).containsExactly("b", "c");
  }

  @Test
  void idleWorkersAreUsedLastInFirstOut() {
    harness(1, Duration.ZERO);
    TestWorker w1 = h.addWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    h.submit("a", 1);
    assertThat(w2.calls()).hasSize(1);
    w2.lastCall().succeed();
    h.submit("b", 1);
    assertThat(w2.calls()).as("the warm worker again").hasSize(2);
    assertThat(w1.calls()).isEmpty();
    h.submit("c", 1);
    assertThat(w1.calls()).hasSize(1);
  }

  @Test
  void severalFullBatchesGoToSeveralIdleWorkersAtOnce() {
    harness(4, DELAY);
    TestWorker w1 = h.addWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    for (int i = 0; i < 9; i++) {
      h.submit("r" + i, 1);
    }
    assertThat(w2.lastCall().ids()).containsExactly("r0", "r1", "r2", "r3");
    assertThat(w1.lastCall().ids()).containsExactly("r4", "r5", "r6", "r7");
    assertThat(h.stats().queueDepth()).isEqualTo(1);
    assertThat(h.stats().inFlightBatches()).isEqualTo(2);
    assertThat(h.stats().inFlightRequests()).isEqualTo(8);
  }

  @Test
  void resultsGoToTheirOwnRequests() {
    harness(4, DELAY);
    TestWorker w = h.addWorker("w1");
    List<CompletableFuture<List<Tensor>>> futures = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      futures.add(h.submit("r" + i, 1));
    }
    w.lastCall().succeed();
    for (int i = 0; i < 4; i++) {
      assertThat(futures.get(i)).isCompletedWithValue(TestWorker.echo(request("r" + i, 1)));
    }
    assertThat(h.stats().completed()).isEqualTo(4);
  }

  @Test
  void aWorkerAnsweringInlineIsFedBatchAfterBatch() {
    harness(4, DELAY);
    List<CompletableFuture<List<Tensor>>> all = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      all.add(h.submit("r" + i, 1 + i % 3));
    }
    List<Integer> batchRows = new ArrayList<>();
    h.dispatcher.addWorker(new WorkerChannel() {
      @Override
      public String id() {
        return "inline";
      }

      @Override
      public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch,
                                                        List<io.kiln.pools.trace.RequestTrace> traces) {
        batchRows.add(batch.stream().mapToInt(Requests::rowsOf).sum());
        return CompletableFuture.completedFuture(batch.stream().map(TestWorker::echo).toList());
      }
    });
    h.clock.advance(DELAY);
    for (int i = 0; i < 30; i++) {
      assertThat(all.get(i)).isCompletedWithValue(TestWorker.echo(request("r" + i, 1 + i % 3)));
    }
    assertThat(batchRows).hasSizeGreaterThan(10).allSatisfy(r -> assertThat(r).isBetween(1, 4));
    assertThat(batchRows.stream().mapToInt(Integer::intValue).sum()).isEqualTo(60);
    assertThat(h.stats()).extracting("completed", "queueDepth", "idleWorkers").containsExactly(30L, 0, 1);
  }

  @Test
  void callbacksMayCallBackIntoTheDispatcher() {
    harness(4, DELAY);
    TestWorker w = h.addWorker("w1");
    CompletableFuture<List<Tensor>> a = h.submit("a", 4);
    Cancellation cToken = Cancellation.create();
    CompletableFuture<List<Tensor>> c = h.submit("c", 1, cToken);
    List<CompletableFuture<List<Tensor>>> b = new ArrayList<>();
    a.thenRun(() -> {
      b.add(h.submit("b", 1));
      cToken.cancel("cancelled from a callback");
    });
    w.lastCall().succeed();
    h.clock.advance(DELAY);
    assertThat(w.calls()).extracting(TestWorker.Call::ids).containsExactly(List.of("a"), List.of("b"));
    assertThat(c).isCompletedExceptionally();
    assertThat(b.get(0)).isNotDone();
    assertThat(h.stats()).extracting("completed", "cancelled", "queueDepth").containsExactly(1L, 1L, 0);
  }

  @Test
  void aBatchCarriesOneTracePerRequestWhenAnyIsTracedAndTheSharedEmptyListWhenNone() {
    harness(4, DELAY);
    TestWorker w = h.addWorker("w1");
    io.kiln.pools.trace.RequestTrace t = new io.kiln.pools.trace.RequestTrace("b",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", null);
    long deadline = h.clock.getAsLong() + PoolConfig.DEFAULT_TIMEOUT.toNanos();
    for (String id : List.of("a", "b", "c", "d")) {
      h.dispatcher.submit(request(id, 1), io.kiln.pools.RequestContext.of(id, deadline, id.equals("b") ? t : null),
          false, null);
    }
    assertThat(w.lastCall().traces()).containsExactly(null, t, null, null);
    w.lastCall().succeed();

    for (String id : List.of("e", "f", "g", "h")) {
      h.submit(id, 1);
    }
    assertThat(w.lastCall().ids()).containsExactly("e", "f", "g", "h");
    assertThat(w.lastCall().traces()).as("untraced: nothing allocated").isSameAs(WorkerChannel.UNTRACED);
  }
}
