package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.failure;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.CallTimeoutException;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Local calls' deadlines: one wake-up per cell, not a timer per call, on a clock the test drives. */
class CallDeadlinesTest {

  private static final long MS = 1_000_000;

  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final AtomicLong clock = new AtomicLong(1_000 * MS);
  private final ArrayDeque<Invocation> waiting = new ArrayDeque<>();
  private final Set<Invocation> running = new LinkedHashSet<>();
  /** Wake-ups asked for, run by the test instead of a timer. */
  private final List<Runnable> wakeups = new ArrayList<>();
  private final List<Long> delays = new ArrayList<>();
  private final CallDeadlines deadlines = new CallDeadlines(waiting, running, clock::get, (delay, task) -> {
    delays.add(delay);
    wakeups.add(task);
  });
  private final ActorHandleImpl<Object> handle = new ActorHandleImpl<>(null, "a1", "default", null, "n1",
      Object.class, Duration.ofMillis(100));

  @AfterEach
  void close() {
    vertx.close();
  }

  private CompletableFuture<Object> call(long deadline, boolean run) {
    CompletableFuture<Object> f = new CompletableFuture<>();
    Invocation inv = new Invocation(null, new LocalReply(f, context, Integer.class, handle), deadline);
    (run ? running : waiting).add(inv);
    deadlines.added(inv);
    return f;
  }

  @Test
  void aThousandQueuedCallsShareOneWakeupAndAllTimeOutWithTheEventBusMessage() {
    List<CompletableFuture<Object>> calls = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      calls.add(call(clock.get() + 100 * MS, false));
      clock.addAndGet(1_000); // deadlines in increasing order, as from one handle
    }
    assertThat(wakeups).hasSize(1);
    assertThat(delays.get(0)).isEqualTo(100);

    clock.addAndGet(200 * MS);
    wakeups.get(0).run();

    for (CompletableFuture<Object> c : calls) {
      assertThat(failure(c)).isInstanceOf(CallTimeoutException.class)
          .hasMessage("no reply from actor ActorHandle[a1 on n1] within PT0.1S");
    }
    assertThat(waiting).hasSize(1000); // they still run, as with the event bus; their answers go nowhere
    assertThat(wakeups).hasSize(1); // nothing left to watch: no further wake-up
  }

  @Test
  void aWakeupFailsOnlyWhatIsDueAndSleepsUntilTheNextDeadline() {
    CompletableFuture<Object> late = call(clock.get() + 500 * MS, false);
    CompletableFuture<Object> runningEarly = call(clock.get() + 50 * MS, true);
    assertThat(wakeups).hasSize(2); // an earlier deadline moves the wake-up forward

    clock.addAndGet(60 * MS);
    wakeups.get(1).run();
    assertThat(failure(runningEarly)).isInstanceOf(CallTimeoutException.class); // a running call is not spared
    assertThat(late).isNotDone();
    assertThat(wakeups).hasSize(3);
    assertThat(delays.get(2)).isEqualTo(440);

    clock.addAndGet(100 * MS);
    wakeups.get(0).run(); // the superseded wake-up for the late call: ignored
    assertThat(wakeups).hasSize(3);
    assertThat(late).isNotDone();

    clock.addAndGet(400 * MS);
    wakeups.get(2).run();
    assertThat(failure(late)).isInstanceOf(CallTimeoutException.class);
  }

  @Test
  void answeredCallsAreNotWatched() {
    CompletableFuture<Object> answered = call(clock.get() + 10 * MS, true);
    running.iterator().next().reply(ReplyMessage.ok(7, Integer.class));
    assertThat(io.kiln.runtime.testing.Await.result(answered)).isEqualTo(7);

    clock.addAndGet(20 * MS);
    assertThat(deadlines.expire()).isZero();
  }
}
