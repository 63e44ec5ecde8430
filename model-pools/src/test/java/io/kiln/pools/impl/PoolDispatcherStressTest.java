package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.Cancellation;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolStats;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.Requests;
import io.kiln.pools.testing.TestWorker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Seeded random workloads — submits, time, answers, worker failures, invalid inputs, cancellations,
 * workers added, removed and restarted, completions handed over late — checked against invariants at
 * every step and an exact account at the end.
 */
class PoolDispatcherStressTest {

  private static final int STEPS = 10_000;

  enum Seen { OK, REJECTED, EXPIRED, FAILED, INVALID, CANCELLED }

  /** What the test knows of one submitted request. */
  private static final class Req {
    final InferenceRequest request;
    final int rows;
    final long deadline;
    CompletableFuture<List<Tensor>> future;
    /** Its token: the test cancels requests through it, as a gateway does. */
    final Cancellation token = Cancellation.create();
    int completions;
    int dispatches;
    boolean executing;
    /** How the worker answered its last dispatch: "ok", "crash" or "invalid". */
    String lastAnswer;

    Req(InferenceRequest request, int rows, long deadline) {
      this.request = request;
      this.rows = rows;
      this.deadline = deadline;
    }
  }

  private record Call(String workerId, List<Req> batch, CompletableFuture<List<List<Tensor>>> future) { }

  private final Map<String, Req> byId = new HashMap<>();
  private final List<Req> all = new ArrayList<>();
  private final List<Call> pendingCalls = new ArrayList<>();
  private final Set<String> liveWorkers = new LinkedHashSet<>();
  private final Set<String> failedWorkers = new LinkedHashSet<>();
  private final ArrayDeque<Runnable> loop = new ArrayDeque<>();
  private int testCancels;
  private int workerSeq;
  private ManualClock clock;
  private PoolConfig config;
  private PoolDispatcher dispatcher;

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 1234567, 20261130})
  void randomWorkloadKeepsEveryInvariant(long seed) {
    Random rnd = new Random(seed);
    boolean deferred = seed % 2 == 0;
    clock = seed % 3 == 0 ? new ManualClock(Long.MAX_VALUE - Duration.ofSeconds(1).toNanos()) : new ManualClock();
    config = PoolConfig.builder().maxBatchSize(1 + rnd.nextInt(8)).maxBatchDelay(Duration.ofNanos(rnd.nextInt(4000) * 1000L))
        .maxQueued(1 + rnd.nextInt(40)).maxRequeues(rnd.nextInt(3)).defaultTimeout(Duration.ofMillis(50)).build();
    Executor executor = deferred ? loop::add : Runnable::run;
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    dispatcher = new PoolDispatcher(config, clock, clock, executor, (id, cause) -> {
      assertThat(liveWorkers).contains(id);
      liveWorkers.remove(id);
      failedWorkers.add(id);
    }, registry, PoolDispatcher.meterTags("stress", "1", "n"));
    for (int i = 0; i < 3; i++) {
      addWorker();
    }

    for (int step = 0; step < STEPS; step++) {
      int action = rnd.nextInt(100);
      if (action < 40) {
        submit(rnd, "r" + step);
      } else if (action < 50) {
        clock.advanceNanos(rnd.nextInt(3_000_000));
      } else if (action < 55) {
        clock.advanceLate(Duration.ofNanos(rnd.nextInt(3_000_000))); // a loaded loop: timers fire late
      } else if (action < 75) {
        answerOne(rnd);
      } else if (action < 79) {
        cancelOne(rnd);
      } else if (action < 82 && liveWorkers.size() + failedWorkers.size() < 6) {
        addWorker();
      } else if (action < 84) {
        removeOne(rnd);
      } else if (action < 89 && !failedWorkers.isEmpty()) {
        restartOne(rnd);
      } else if (action < 100) {
        runLoop(rnd.nextBoolean() ? loop.size() : rnd.nextInt(loop.size() + 1));
      }
      checkLiveInvariants();
    }

    CompletableFuture<Void> drained = dispatcher.drain().toCompletableFuture();
    if (liveWorkers.isEmpty()) {
      addWorker();
    }
    for (int i = 0; i < 100_000 && !drained.isDone(); i++) {
      if (!pendingCalls.isEmpty()) {
        answer(pendingCalls.get(0), 0);
      }
      runLoop(loop.size());
      if (liveWorkers.isEmpty()) {
        addWorker();
      }
      clock.advanceNanos(100_000);
    }
    assertThat(drained).isCompleted();
    checkFinalAccount(registry);
    dispatcher.close();
    assertThat(registry.getMeters()).isEmpty();
  }

  private void submit(Random rnd, String id) {
    int rows = rnd.nextInt(50) == 0 ? config.maxBatchSize() + 1 + rnd.nextInt(3) : 1 + rnd.nextInt(4);
    InferenceRequest request = Requests.request(id, rows, rnd.nextBoolean() ? 4 : 8);
    long deadline = clock.getAsLong() + Duration.ofMillis(rnd.nextInt(100)).toNanos();
    Req r = new Req(request, rows, deadline);
    byId.put(id, r);
    all.add(r);
    int queuedBefore = dispatcher.stats().queueDepth();
    r.future = dispatcher.submit(request, RequestContext.of(id, deadline, null, RequestContext.Priority.NORMAL, r.token),
        false, null);
    r.future.whenComplete((v, e) -> r.completions++);
    if (r.future.isCompletedExceptionally() && seen(r) == Seen.REJECTED) {
      Throwable cause = r.future.handle((v, e) -> e).join();
      assertThat(cause).isInstanceOf(CapacityExceededException.class);
      assertThat(((CapacityExceededException) cause).retryAfter()).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(30));
      assertThat(queuedBefore).isEqualTo(config.maxQueued());
    }
  }

  private void answerOne(Random rnd) {
    if (!pendingCalls.isEmpty()) {
      answer(pendingCalls.get(rnd.nextInt(pendingCalls.size())), rnd.nextInt(100));
    }
  }

  private void answer(Call call, int dice) {
    pendingCalls.remove(call);
    String answer = dice < 80 ? "ok" : dice < 92 ? "crash" : "invalid";
    call.batch.forEach(r -> {
      r.executing = false;
      r.lastAnswer = answer;
    });
    if (dice < 80) {
      call.future.complete(call.batch.stream().map(r -> TestWorker.echo(r.request)).toList());
    } else if (dice < 92) {
      call.future.completeExceptionally(new RuntimeException("worker crashed"));
    } else {
      call.future.completeExceptionally(InferenceException.invalid("bad input"));
    }
  }

  private void cancelOne(Random rnd) {
    if (!all.isEmpty()) {
      Req r = all.get(all.size() - 1 - rnd.nextInt(Math.min(all.size(), 50)));
      // A token cancels once; a request already answered ignores it.
      if (!r.future.isDone() && r.token.cancel("the test cancelled it")) {
        testCancels++;
      }
    }
  }

  private void addWorker() {
    String id = "w" + workerSeq++;
    liveWorkers.add(id);
    dispatcher.addWorker(new Worker(id));
  }

  private void removeOne(Random rnd) {
    List<String> ids = new ArrayList<>(liveWorkers);
    ids.addAll(failedWorkers);
    if (!ids.isEmpty()) {
      String id = ids.get(rnd.nextInt(ids.size()));
      liveWorkers.remove(id);
      failedWorkers.remove(id);
      dispatcher.removeWorker(id);
    }
  }

  private void restartOne(Random rnd) {
    String id = new ArrayList<>(failedWorkers).get(rnd.nextInt(failedWorkers.size()));
    failedWorkers.remove(id);
    liveWorkers.add(id);
    dispatcher.addWorker(new Worker(id));
  }

  private void runLoop(int n) {
    for (int i = 0; i < n && !loop.isEmpty(); i++) {
      loop.poll().run();
    }
  }

  /** Checks every batch as a worker receives it. */
  private final class Worker implements WorkerChannel {
    private final String id;

    Worker(String id) {
      this.id = id;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> requests,
                                                      List<io.kiln.pools.trace.RequestTrace> traces) {
      check(liveWorkers.contains(id), "only workers in rotation get batches", id);
      check(pendingCalls.stream().noneMatch(c -> c.workerId.equals(id)), "one batch at a time per worker", id);
      check(!requests.isEmpty(), "no empty batch", id);
      List<Req> batch = requests.stream().map(q -> byId.get(q.id())).toList();
      int rows = batch.stream().mapToInt(r -> r.rows).sum();
      check(batch.size() == 1 || rows <= config.maxBatchSize(), "rows in a batch of several <= maxBatchSize", rows);
      long width = requests.get(0).inputs().get(0).shape()[1];
      check(requests.stream().allMatch(q -> q.inputs().get(0).shape()[1] == width), "one shape per batch", requests);
      for (Req r : batch) {
        String rid = r.request.id();
        check(clock.getAsLong() - r.deadline < 0, "never dispatched past its deadline", rid);
        // r.future is null while its own submit is dispatching it
        check(r.future == null || !r.future.isDone(), "never dispatched once answered or cancelled", rid);
        check(!r.executing, "not dispatched twice while executing", rid);
        check(r.dispatches == 0 || "crash".equals(r.lastAnswer), "dispatched again only after its worker failed", rid);
        r.dispatches++;
        check(r.dispatches <= 1 + config.maxRequeues(), "dispatched at most 1 + maxRequeues times", rid);
        r.executing = true;
      }
      Call call = new Call(id, batch, new CompletableFuture<>());
      pendingCalls.add(call);
      return call.future;
    }
  }

  // Plain checks on the hot path: AssertJ per step would dominate the run time.
  private static void check(boolean ok, String invariant, Object context) {
    if (!ok) {
      throw new AssertionError("broken invariant: " + invariant + " (" + context + ")");
    }
  }

  private void checkLiveInvariants() {
    PoolStats s = dispatcher.stats();
    check(s.queueDepth() >= 0 && s.queueDepth() <= config.maxQueued(), "0 <= queue depth <= maxQueued", s);
    check(s.inFlightRequests() >= 0, "in-flight requests >= 0", s);
    if (loop.isEmpty()) {
      check(s.inFlightBatches() == pendingCalls.size(), "in-flight batches = calls not answered", s);
      check(s.busyWorkers() == pendingCalls.size(), "busy workers = calls not answered", s);
      check(s.inFlightRequests() == pendingCalls.stream().mapToInt(c -> c.batch.size()).sum(),
          "in-flight requests = requests in calls not answered", s);
      check(s.failedWorkers() == failedWorkers.size(), "failed workers as the listener was told", s);
      check(s.idleWorkers() + s.busyWorkers() >= 0 && s.idleWorkers() <= liveWorkers.size(), "idle workers are live", s);
    }
  }

  private void checkFinalAccount(SimpleMeterRegistry registry) {
    Map<Seen, Integer> seen = new EnumMap<>(Seen.class);
    for (Req r : all) {
      assertThat(r.future).as(r.request.id()).isDone();
      assertThat(r.completions).as(r.request.id()).isEqualTo(1);
      Seen how = seen(r);
      seen.merge(how, 1, Integer::sum);
      if (how == Seen.OK) {
        assertThat(r.future.join()).isEqualTo(TestWorker.echo(r.request));
      }
    }
    PoolStats s = dispatcher.stats();
    assertThat(s.queueDepth()).isZero();
    assertThat(s.inFlightRequests()).isZero();
    assertThat(Map.of(Seen.OK, s.completed(), Seen.REJECTED, s.rejected(), Seen.EXPIRED, s.expired(), Seen.FAILED,
        s.failed(), Seen.INVALID, s.invalid(), Seen.CANCELLED, s.cancelled()))
        .isEqualTo(Map.of(Seen.OK, (long) seen.getOrDefault(Seen.OK, 0), Seen.REJECTED, (long) seen.getOrDefault(Seen.REJECTED, 0),
            Seen.EXPIRED, (long) seen.getOrDefault(Seen.EXPIRED, 0), Seen.FAILED, (long) seen.getOrDefault(Seen.FAILED, 0),
            Seen.INVALID, (long) seen.getOrDefault(Seen.INVALID, 0), Seen.CANCELLED, (long) seen.getOrDefault(Seen.CANCELLED, 0)));
    assertThat(s.cancelled()).isEqualTo(testCancels);
    double counted = registry.get("kiln.pool.requests").counters().stream().mapToDouble(c -> c.count()).sum();
    assertThat(counted).isEqualTo(all.size());
    assertThat(seen.getOrDefault(Seen.OK, 0)).as("a workload that mostly works").isGreaterThan(all.size() / 10);
  }

  private static Seen seen(Req r) {
    if (!r.future.isDone()) {
      return null;
    }
    Throwable e = r.future.handle((v, t) -> t).join();
    if (e == null) {
      return Seen.OK;
    }
    InferenceException ie = (InferenceException) e;
    if (ie.getMessage().startsWith("request cancelled")) {
      return Seen.CANCELLED;
    }
    return switch (ie.kind()) {
      case DEADLINE_EXCEEDED -> Seen.EXPIRED;
      case INVALID_INPUT -> Seen.INVALID;
      case UNAVAILABLE -> ie instanceof CapacityExceededException || ie.getMessage().contains("draining")
          ? Seen.REJECTED : Seen.FAILED;
      default -> throw new AssertionError("unexpected " + ie);
    };
  }
}
