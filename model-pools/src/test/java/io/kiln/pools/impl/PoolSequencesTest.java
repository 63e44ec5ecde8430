package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.RequestContext;
import io.kiln.pools.SequenceSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.Requests;
import io.kiln.pools.testing.TestWorker;
import io.kiln.pools.trace.RequestTrace;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The pool's side of sequences on a manual clock and scripted workers: which worker holds a sequence, one request of
 * a sequence at a time, different sequences of one worker batched together, the idle sweep at exactly the timeout,
 * and a failed worker's sequences reported lost, never restarted silently.
 */
class PoolSequencesTest {

  private static final Duration IDLE = Duration.ofSeconds(10);
  private final DispatcherHarness h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(4)
      .maxBatchDelay(Duration.ofMillis(5)).maxQueued(64).build());
  private final PoolSequences sequences = new PoolSequences("vad", new SequenceSpec(IDLE, 3,
      List.of(new SequenceSpec.StateSpec("state", "stateN", 0))), false, 2, h.dispatcher, h.clock, h.clock, h.registry,
      PoolDispatcher.meterTags("vad", "1", "node-a"));

  /** A scripted worker that also records which sequences it was told to free. */
  static final class Worker implements WorkerChannel {
    final TestWorker scripted;
    final List<List<String>> ended = new ArrayList<>();

    Worker(String id) {
      scripted = new TestWorker(id);
    }

    @Override
    public String id() {
      return scripted.id();
    }

    @Override
    public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch, List<RequestTrace> traces) {
      return scripted.infer(batch, traces);
    }

    @Override
    public CompletionStage<Integer> endSequences(List<String> ids) {
      ended.add(ids);
      return CompletableFuture.completedFuture(ids.size());
    }
  }

  @AfterEach
  void close() {
    sequences.close();
    h.close();
  }

  Worker worker(String id) {
    Worker w = new Worker(id);
    h.dispatcher.addWorker(w);
    return w;
  }

  CompletableFuture<List<Tensor>> send(String request, String sequence, boolean start, boolean end) {
    Map<String, Object> params = new HashMap<>();
    params.put(SequenceSpec.SEQUENCE_ID, sequence);
    params.put(SequenceSpec.SEQUENCE_START, start);
    params.put(SequenceSpec.SEQUENCE_END, end);
    InferenceRequest base = Requests.request(request, 1);
    InferenceRequest r = new InferenceRequest(request, base.inputs(), base.outputs(), params);
    return sequences.submit(r, RequestContext.of(request, h.clock.getAsLong() + Duration.ofMinutes(1).toNanos()),
        false);
  }

  double open() {
    return h.registry.find("kiln.pool.sequences.open").gauge().value();
  }

  @Test
  void aSequencesRequestsRunOneAtATimeInOrderOnTheWorkerThatHoldsIt() {
    Worker w1 = worker("w1");
    Worker w2 = worker("w2");
    CompletableFuture<List<Tensor>> a1 = send("a1", "a", true, false);
    CompletableFuture<List<Tensor>> a2 = send("a2", "a", false, false);
    CompletableFuture<List<Tensor>> a3 = send("a3", "a", false, true);
    h.clock.advance(Duration.ofMillis(5));
    Worker holder = w1.scripted.isRunning() ? w1 : w2;
    Worker other = holder == w1 ? w2 : w1;
    assertThat(holder.scripted.running().ids()).containsExactly("a1");
    holder.scripted.running().succeed();
    h.clock.advance(Duration.ofMillis(5));
    assertThat(a1).isCompleted();
    assertThat(holder.scripted.running().ids()).as("the next goes once the previous was answered").containsExactly("a2");
    holder.scripted.running().succeed();
    h.clock.advance(Duration.ofMillis(5));
    holder.scripted.running().succeed();
    assertThat(a2).isCompleted();
    assertThat(a3).isCompleted();
    assertThat(other.scripted.calls()).as("never on another worker").isEmpty();
    assertThat(open()).isZero();
    assertThat(h.registry.find("kiln.pool.sequences.ended").counter().count()).isEqualTo(1);
  }

  @Test
  void newSequencesGoToTheWorkerHoldingFewestAndOneWorkersSequencesBatchTogether() {
    Worker w1 = worker("w1");
    Worker w2 = worker("w2");
    for (String s : List.of("a", "b", "c")) {
      send(s + "0", s, true, false);
    }
    h.clock.advance(Duration.ofMillis(5));
    // a -> w1, b -> w2, c -> w1 (fewest, ties by id): w1's two starts share one batch.
    assertThat(w1.scripted.running().ids()).containsExactly("a0", "c0");
    assertThat(w2.scripted.running().ids()).containsExactly("b0");
    assertThat(open()).isEqualTo(3);
    w1.scripted.running().succeed();
    w2.scripted.running().succeed();
    assertThat(send("d0", "d", true, false)).as("max_sequences 3").isCompletedExceptionally()
        .failsWithin(Duration.ZERO).withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withMessageContaining("max_sequences");
  }

  @Test
  void anIdleSequenceIsFreedAtItsTimeoutAndItsWorkerToldToDropItsState() {
    Worker w1 = worker("w1");
    send("a0", "a", true, false);
    h.clock.advance(Duration.ofMillis(5));
    w1.scripted.running().succeed();
    assertThat(open()).isEqualTo(1);

    h.clock.advance(IDLE.minusMillis(5).minusNanos(1));
    assertThat(open()).as("not before its timeout").isEqualTo(1);
    h.clock.advance(IDLE); // the sweep runs every quarter of the timeout
    assertThat(open()).isZero();
    assertThat(w1.ended).containsExactly(List.of("a"));
    assertThat(h.registry.find("kiln.pool.sequences.expired").counter().count()).isEqualTo(1);
    CompletableFuture<List<Tensor>> late = send("a1", "a", false, false);
    assertThat(late).isCompletedExceptionally();
    assertThat(late.handle((v, e) -> e).join()).isInstanceOf(InferenceException.class)
        .hasMessageContaining("no open sequence 'a'");
  }

  @Test
  void aWorkerFailingUnderASequenceLosesItAndItsWaitingRequestsNamingTheSequence() {
    Worker w1 = worker("w1");
    send("a0", "a", true, false);
    h.clock.advance(Duration.ofMillis(5));
    w1.scripted.running().succeed();
    CompletableFuture<List<Tensor>> a1 = send("a1", "a", false, false);
    CompletableFuture<List<Tensor>> a2 = send("a2", "a", false, false);
    h.clock.advance(Duration.ofMillis(5));
    w1.scripted.running().fail(new IllegalStateException("worker process died"));

    for (CompletableFuture<List<Tensor>> f : List.of(a1, a2)) {
      assertThat(f.handle((v, e) -> e).join()).isInstanceOfSatisfying(InferenceException.class, e -> {
        assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE);
        assertThat(e.getMessage()).contains("sequence 'a' was lost", "worker w1 failed");
      });
    }
    assertThat(w1.scripted.calls()).as("the failed request was not re-queued").hasSize(2);
    assertThat(send("a3", "a", false, false).handle((v, e) -> e).join())
        .hasMessageContaining("sequence 'a' was lost");
    assertThat(h.registry.find("kiln.pool.sequences.lost").counter().count()).isEqualTo(1);
    assertThat(open()).isZero();
  }

  @Test
  void requestsWaitingBehindTheirSequencesAreBoundedByTheQueueLimit() {
    Worker w1 = worker("w1");
    send("a0", "a", true, false);
    send("a1", "a", false, false);
    send("a2", "a", false, false);
    CompletableFuture<List<Tensor>> over = send("a3", "a", false, false);
    assertThat(over.handle((v, e) -> e).join()).isInstanceOf(io.kiln.pools.CapacityExceededException.class)
        .hasMessageContaining("queue.max_queued");
    h.clock.advance(Duration.ofMillis(5));
    w1.scripted.running().succeed();
    assertThat(send("a4", "a", false, false)).as("room again once one went to the worker").isNotDone();
  }

  @Test
  void aSequenceWhoseWorkerLeftThePoolIsLostAndStartsAgainOnAnother() {
    Worker w1 = worker("w1");
    send("a0", "a", true, false);
    h.clock.advance(Duration.ofMillis(5));
    w1.scripted.running().succeed();
    Worker w2 = worker("w2");
    h.dispatcher.removeWorker("w1"); // scaled down

    assertThat(send("a1", "a", false, false).handle((v, e) -> e).join())
        .hasMessageContaining("sequence 'a' was lost: worker w1 left the pool");
    send("a2", "a", true, false);
    h.clock.advance(Duration.ofMillis(5));
    assertThat(w2.scripted.running().ids()).containsExactly("a2");
  }
}
