package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.testing.TestNodes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A serial worker actor's {@link ActorLane}: work handed straight to its thread runs there, in turn with its calls,
 * and completes there; an incarnation that ends fails the lane's open work at once (queued work never runs on the
 * retired instance); an {@link Error} in lane work breaks the incarnation as one in a method does.
 */
class ActorLaneTest {

  static KilnRuntime runtime;
  private static final Duration WAIT = Duration.ofSeconds(30);

  /** Where each {@link Serial} incarnation publishes itself and its lane, by name (a node-local service). */
  public static final class Published {
    final Map<String, Serial> instances = new ConcurrentHashMap<>();
    final Map<String, ActorLane> lanes = new ConcurrentHashMap<>();
  }

  public static final class Serial implements AutoCloseable {
    private final AtomicInteger active = new AtomicInteger();
    final AtomicBoolean overlapped = new AtomicBoolean();
    final Set<String> threads = ConcurrentHashMap.newKeySet();
    final AtomicBoolean closed = new AtomicBoolean();
    private int steps;

    public Serial(String name) {
      ActorContext ctx = ActorContext.current();
      Published p = ctx.runtime().localService(Published.class).orElseThrow();
      p.instances.put(name, this);
      p.lanes.put(name, ctx.lane());
    }

    /** A step that notices whether another one runs beside it. */
    public int step() {
      if (active.incrementAndGet() > 1) {
        overlapped.set(true);
      }
      threads.add(Thread.currentThread().getName());
      LockSupport.parkNanos(50_000);
      active.decrementAndGet();
      return ++steps;
    }

    public int restarts() {
      return ActorContext.current().restartCount();
    }

    @Override
    public void close() {
      closed.set(true);
    }
  }

  public static final class OnLoop {
    public String laneRefusal() {
      try {
        ActorContext.current().lane();
        return "none";
      } catch (IllegalStateException e) {
        return e.getMessage();
      }
    }
  }

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("lanes", Resources.cpu(4));
    runtime.registerLocalService(Published.class, new Published());
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  private static Published published() {
    return runtime.localService(Published.class).orElseThrow();
  }

  private static ActorHandle<Serial> serial(String name, int maxRestarts) {
    return result(runtime.actor(Serial::new, name).name(name).mode(ExecutionMode.WORKER).maxConcurrency(1)
        .maxRestarts(maxRestarts).remote());
  }

  @Test
  void laneWorkRunsOnTheActorsThreadInTurnWithItsCallsAndCompletesThere() {
    ActorHandle<Serial> h = serial("lane-serial", 0);
    Serial s = published().instances.get("lane-serial");
    ActorLane lane = published().lanes.get("lane-serial");
    CountDownLatch gate = new CountDownLatch(1);
    // Holds the thread until every dependent below is registered, so that none runs on this thread instead.
    CompletableFuture<Boolean> held = lane.submit(() -> gate.await(30, TimeUnit.SECONDS));
    List<CompletableFuture<String>> direct = new ArrayList<>();
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      direct.add(lane.submit(s::step).thenApply(n -> Thread.currentThread().getName()));
      calls.add(h.call(Serial::step));
    }
    gate.countDown();
    assertThat(result(held, WAIT)).isTrue();
    List<String> completedOn = new ArrayList<>();
    direct.forEach(f -> completedOn.add(result(f, WAIT)));
    calls.forEach(c -> result(c, WAIT));

    assertThat(s.overlapped).as("never beside a call or other lane work").isFalse();
    assertThat(s.threads).hasSize(1).allSatisfy(t -> assertThat(t).startsWith("kiln-actor-lane-serial-"));
    assertThat(completedOn).as("completed on the actor's thread, no hop").allMatch(s.threads::contains);
    assertThat(result(h.call(Serial::step))).as("every step ran once").isEqualTo(201);
  }

  @Test
  void anIncarnationThatEndsFailsItsOpenLaneWorkAtOnceAndQueuedWorkNeverRuns() throws Exception {
    ActorHandle<Serial> h = serial("lane-kill", 2);
    Serial old = published().instances.get("lane-kill");
    ActorLane lane = published().lanes.get("lane-kill");
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean queuedRan = new AtomicBoolean();
    CountDownLatch began = new CountDownLatch(1);
    CompletableFuture<Integer> running = lane.submit(() -> {
      began.countDown();
      return release.await(60, TimeUnit.SECONDS) ? 1 : 0;
    });
    CompletableFuture<Integer> queued = lane.submit(() -> {
      queuedRan.set(true);
      return 2;
    });
    try {
      assertThat(began.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
      result(runtime.kill(h, true), WAIT);

      assertThat(failure(running, WAIT)).as("failed while its work still runs")
          .isInstanceOf(ActorDiedException.class).isNotInstanceOf(ActorLane.NotRunException.class)
          .hasMessageContaining("lane-kill");
      assertThat(failure(queued, WAIT)).as("never began: safe to send again")
          .isInstanceOf(ActorLane.NotRunException.class);
      assertThat(lane.live()).isFalse();
      assertThat(lane.submit(() -> 3)).as("new work on an ended lane fails at once").isCompletedExceptionally();
      await().atMost(WAIT).until(() -> published().lanes.get("lane-kill") != lane);
      ActorLane next = published().lanes.get("lane-kill");
      assertThat(next.live()).isTrue();
      Serial current = published().instances.get("lane-kill");
      assertThat(result(next.submit(current::step), WAIT)).isEqualTo(1);
    } finally {
      release.countDown();
    }
    await().atMost(WAIT).untilTrue(old.closed);
    assertThat(queuedRan).as("queued behind the running work, never run on the retired instance").isFalse();
  }

  @Test
  void anErrorInLaneWorkBreaksTheIncarnationAsOneInAMethodDoes() {
    ActorHandle<Serial> h = serial("lane-fatal", 1);
    ActorLane lane = published().lanes.get("lane-fatal");

    assertThat(failure(lane.submit(() -> {
      throw new FatalActorError("lane work broke");
    }), WAIT)).isInstanceOf(FatalActorError.class);

    await().atMost(WAIT).until(() -> result(h.info()).restarts() == 1);
    assertThat(result(h.call(Serial::restarts), WAIT)).isEqualTo(1);
    assertThat(lane.live()).isFalse();
    assertThat(published().lanes.get("lane-fatal").live()).isTrue();
  }

  @Test
  void onlyASerialWorkerActorHasALane() {
    ActorHandle<OnLoop> h = result(runtime.actor(OnLoop::new).mode(ExecutionMode.EVENT_LOOP).remote());
    assertThat(result(h.call(OnLoop::laneRefusal))).contains("only a serial WORKER actor");
  }
}
