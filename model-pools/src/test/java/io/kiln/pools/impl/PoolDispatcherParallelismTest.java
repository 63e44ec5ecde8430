package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.TestWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link PoolDispatcher#limitParallelism}: a busy pool lets partial batches fill; an idle one never waits. */
class PoolDispatcherParallelismTest {

  private final DispatcherHarness h = new DispatcherHarness(
      PoolConfig.builder().maxBatchSize(4).maxBatchDelay(Duration.ZERO).build());

  @AfterEach
  void close() {
    h.close();
  }

  /** One batch that took {@code millis} on the manual clock, so the pool knows how long a batch takes. */
  private void oneBatchOf(long millis) {
    CompletableFuture<List<Tensor>> first = h.submit("first", 1);
    h.clock.advanceMillis(millis);
    for (TestWorker w : workers) {
      if (w.isRunning()) {
        w.running().succeed();
      }
    }
    assertThat(first).isCompleted();
  }

  private final List<TestWorker> workers = new ArrayList<>();

  private TestWorker worker(String id) {
    TestWorker w = h.addWorker(id);
    workers.add(w);
    return w;
  }

  @Test
  void withOneBatchAtATimeASecondPartialBatchWaitsForTheBusyWorker() {
    h.dispatcher.limitParallelism(1);
    TestWorker w1 = worker("w1");
    TestWorker w2 = worker("w2");
    oneBatchOf(5);
    w1.calls().clear();
    w2.calls().clear();
    CompletableFuture<List<Tensor>> a = h.submit("a", 1);
    assertThat(w1.calls().size() + w2.calls().size()).as("an idle pool dispatches at once").isEqualTo(1);
    TestWorker first = w1.calls().isEmpty() ? w2 : w1;
    TestWorker other = first == w1 ? w2 : w1;
    h.submit("b", 1);
    h.submit("c", 1);
    assertThat(other.calls()).as("b and c wait for the busy worker instead of time-slicing it").isEmpty();
    first.lastCall().succeed();
    assertThat(a).isCompleted();
    List<TestWorker.Call> all = new ArrayList<>(w1.calls());
    all.addAll(w2.calls());
    assertThat(all).hasSize(2);
    assertThat(all).as("they went together, once the busy worker freed").anySatisfy(c ->
        assertThat(c.ids()).containsExactly("b", "c"));
  }

  @Test
  void aHungWorkerHoldsTheOthersAtMostAboutOneBatchTime() {
    h.dispatcher.limitParallelism(1);
    TestWorker w1 = worker("w1");
    TestWorker w2 = worker("w2");
    oneBatchOf(5);
    w1.calls().clear();
    w2.calls().clear();
    h.submit("hangs", 1);
    TestWorker hung = w1.isRunning() ? w1 : w2;
    TestWorker other = hung == w1 ? w2 : w1;
    CompletableFuture<List<Tensor>> b = h.submit("b", 1);
    assertThat(other.calls()).isEmpty();
    h.clock.advanceMillis(5);
    assertThat(other.calls()).as("b went to the idle worker after one batch time").singleElement()
        .extracting(TestWorker.Call::ids).isEqualTo(List.of("b"));
    other.lastCall().succeed();
    assertThat(b).isCompleted();
  }

  @Test
  void nothingHoldsBeforeABatchWasMeasured() {
    h.dispatcher.limitParallelism(1);
    TestWorker w1 = worker("w1");
    TestWorker w2 = worker("w2");
    h.submit("a", 1);
    h.submit("b", 1);
    assertThat(w1.isRunning() && w2.isRunning()).isTrue();
  }

  @Test
  void aFullBatchGoesToAnIdleWorkerAtOnce() {
    h.dispatcher.limitParallelism(1);
    TestWorker w1 = worker("w1");
    TestWorker w2 = worker("w2");
    oneBatchOf(5);
    w1.calls().clear();
    w2.calls().clear();
    h.submit("a", 1);
    for (int i = 0; i < 4; i++) {
      h.submit("f" + i, 1);
    }
    assertThat(w1.calls().size() + w2.calls().size()).isEqualTo(2);
    assertThat(w1.isRunning() && w2.isRunning()).isTrue();
  }

  @Test
  void unlimitedByDefaultEveryIdleWorkerTakesWhatIsQueued() {
    TestWorker w1 = h.addWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    h.submit("a", 1);
    h.submit("b", 1);
    assertThat(w1.isRunning() && w2.isRunning()).isTrue();
  }

  @Test
  void drainingNeverHolds() {
    h.dispatcher.limitParallelism(1);
    TestWorker w1 = worker("w1");
    TestWorker w2 = worker("w2");
    oneBatchOf(5);
    h.submit("a", 1);
    h.submit("b", 1);
    h.dispatcher.drain();
    assertThat(w1.isRunning() && w2.isRunning()).as("b left at once when the pool began to drain").isTrue();
  }

  @Test
  void refusesAParallelismBelowOne() {
    assertThatThrownBy(() -> h.dispatcher.limitParallelism(0)).isInstanceOf(IllegalArgumentException.class);
  }
}
