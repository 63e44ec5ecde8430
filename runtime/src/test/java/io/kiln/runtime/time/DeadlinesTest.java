package io.kiln.runtime.time;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.internal.ContextInternal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The one timer facility on a real Vert.x: per-context lists, one timer each, and the off-loop list. */
@Tag("slow")
class DeadlinesTest {

  private static final long MS = 1_000_000;

  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  /** Added to the real clock: a test jumps time forward without waiting for it. */
  private final AtomicLong skew = new AtomicLong();
  private final Deadlines deadlines = Deadlines.create(vertx, () -> System.nanoTime() + skew.get());
  private final List<String> expired = new CopyOnWriteArrayList<>();

  @AfterEach
  void close() {
    vertx.close().await();
  }

  private class Named extends Deadlines.Entry {
    final String name;

    Named(String name) {
      this.name = name;
    }

    @Override
    protected void expired() {
      assertThat(watched()).isFalse();
      expired.add(name);
    }
  }

  private <T> T on(Context ctx, Supplier<T> body) {
    CompletableFuture<T> f = new CompletableFuture<>();
    ctx.runOnContext(v -> {
      try {
        f.complete(body.get());
      } catch (Throwable t) {
        f.completeExceptionally(t);
      }
    });
    return f.orTimeout(10, TimeUnit.SECONDS).join();
  }

  private long now() {
    return deadlines.clock().getAsLong();
  }

  @Test
  void entriesExpireInDeadlineOrderAndLeaveNoTimer() {
    on(context, () -> {
      long now = now();
      deadlines.add(new Named("c"), now + 60 * MS);
      deadlines.add(new Named("a"), now + 20 * MS); // shorter: inserted from the tail back to the head
      deadlines.add(new Named("b1"), now + 40 * MS);
      deadlines.add(new Named("b2"), now + 40 * MS); // a tie keeps arrival order
      return deadlines.listed();
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> expired.size() == 4);
    assertThat(expired).containsExactly("a", "b1", "b2", "c");
    assertThat(on(context, deadlines::listed)).isZero();
    assertThat(on(context, deadlines::armed)).as("nothing listed, no timer").isFalse();
  }

  @Test
  void anEntryNeverExpiresBeforeItsDeadline() {
    long[] deadlineAndSeen = new long[2];
    Deadlines.Entry e = new Deadlines.Entry() {
      @Override
      protected void expired() {
        deadlineAndSeen[1] = System.nanoTime();
      }
    };
    on(context, () -> {
      deadlineAndSeen[0] = now() + 30 * MS;
      deadlines.add(e, deadlineAndSeen[0]);
      return null;
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> on(context, () -> deadlineAndSeen[1] != 0));
    assertThat(deadlineAndSeen[1]).isGreaterThanOrEqualTo(deadlineAndSeen[0]);
  }

  @Test
  void aCancelledEntryNeverExpiresAndAnIdleListsTimerFiresOnceMoreAndStops() {
    Named b = new Named("b");
    on(context, () -> {
      long now = now();
      deadlines.add(new Named("a"), now + 20 * MS);
      deadlines.add(b, now + 30 * MS);
      deadlines.add(new Named("c"), now + 40 * MS);
      assertThat(b.remove()).isTrue();
      assertThat(b.remove()).as("idempotent").isFalse();
      return null;
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> expired.size() == 2);
    assertThat(expired).containsExactly("a", "c");

    Named d = new Named("d");
    Named e = new Named("e");
    boolean armedWhileListed = on(context, () -> {
      deadlines.add(d, now() + 1_000 * MS);
      deadlines.add(e, now() + 20_000 * MS);
      return deadlines.armed();
    });
    assertThat(armedWhileListed).isTrue();
    assertThat(on(context, () -> d.remove() && e.remove())).isTrue();
    assertThat(on(context, deadlines::listed)).isZero();
    assertThat(on(context, deadlines::armed)).as("the last one out leaves the timer armed").isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> !on(context, deadlines::armed)); // fired for d: nothing due
    assertThat(expired).containsExactly("a", "c");
  }

  /**
   * One request in flight at a time, each answered within the timeout: the first arms the timer and the others find
   * it armed for an earlier deadline than theirs, so N requests cost one timer, not N armed and cancelled.
   */
  @Test
  void oneInFlightAtATimeArmsOneTimerNotOnePerRequest() {
    AtomicLong clock = new AtomicLong(1_000 * MS);
    List<Runnable> tasks = new ArrayList<>();
    List<Long> cancelled = new ArrayList<>();
    Deadlines confined = Deadlines.confined(recording(tasks, new ArrayList<>(), cancelled), clock::get, null);
    for (int i = 0; i < 100; i++) {
      Named request = new Named("r" + i);
      confined.add(request, clock.get() + 100 * MS);
      clock.addAndGet(MS / 2); // answered half a millisecond later
      assertThat(request.remove()).isTrue();
    }
    assertThat(tasks).as("armed once for all of them").hasSize(1);
    assertThat(cancelled).as("never cancelled").isEmpty();
    clock.addAndGet(100 * MS);
    tasks.get(0).run(); // the one firing: nothing due, nothing listed
    assertThat(expired).isEmpty();
    assertThat(tasks).as("not re-armed on an empty list").hasSize(1);
    assertThat(confined.armed()).isFalse();
  }

  /** Runs of several timeouts interleaved (a call and the calls it makes) and more runs than lanes. */
  @Test
  void interleavedTimeoutsExpireInDeadlineOrder() {
    AtomicLong clock = new AtomicLong(1_000 * MS);
    List<Runnable> tasks = new ArrayList<>();
    Deadlines confined = Deadlines.confined(recording(tasks, new ArrayList<>(), new ArrayList<>()), clock::get, null);
    List<Long> added = new ArrayList<>();
    java.util.Map<String, Long> deadlineOf = new java.util.HashMap<>();
    for (int i = 0; i < 200; i++) {
      for (int timeout = 0; timeout < DeadlineList.LANES + 2; timeout++) {
        long deadline = clock.get() + (100 + 7L * timeout) * MS;
        String name = i + "/" + timeout;
        confined.add(new Named(name), deadline);
        deadlineOf.put(name, deadline);
        added.add(deadline);
      }
      confined.add(new Named(i + "/short"), clock.get() + 3 * MS); // earlier than every lane's last
      deadlineOf.put(i + "/short", clock.get() + 3 * MS);
      clock.addAndGet(MS / 4);
    }
    assertThat(confined.listed()).isEqualTo(200 * (DeadlineList.LANES + 3));
    clock.addAndGet(1_000 * MS);
    tasks.get(tasks.size() - 1).run();
    assertThat(expired).hasSize(200 * (DeadlineList.LANES + 3));
    List<Long> order = expired.stream().map(deadlineOf::get).toList();
    assertThat(order).isSorted();
  }

  private static Timers recording(List<Runnable> tasks, List<Long> delays, List<Long> cancelled) {
    return new Timers() {
      @Override
      public long schedule(long delayNanos, Runnable task) {
        delays.add(delayNanos);
        tasks.add(task);
        return tasks.size() - 1;
      }

      @Override
      public void cancel(long id) {
        cancelled.add(id);
      }
    };
  }

  @Test
  void anEarlierDeadlineBecomingTheHeadReArmsTheTimer() {
    on(context, () -> {
      deadlines.add(new Named("late"), now() + 600_000 * MS); // ten minutes: the armed timer waits for this
      deadlines.add(new Named("soon"), now() + 20 * MS);
      return null;
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> expired.contains("soon"));
    assertThat(expired).containsExactly("soon");
    assertThat(on(context, deadlines::listed)).isOne();
    assertThat(on(context, deadlines::armed)).as("re-armed for the head left").isTrue();
  }

  @Test
  void aTimerThatFiresBeforeAJumpOfTheClockWaitsAgainAndExpiresOnceDue() {
    on(context, () -> {
      deadlines.add(new Named("x"), now() + 30 * MS);
      return null;
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> expired.size() == 1);
    on(context, () -> {
      deadlines.add(new Named("y"), now() + 3_600_000 * MS); // an hour
      return null;
    });
    skew.addAndGet(3_600_000 * MS); // the clock jumps: due at the next firing, which the re-armed timer brings
    on(context, () -> {
      deadlines.add(new Named("z"), now() - 7_200_000 * MS); // an earlier head re-arms the timer now
      return null;
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> expired.size() == 3);
    assertThat(expired).containsExactly("x", "z", "y");
  }

  @Test
  void eachContextHasItsOwnList() {
    Context other = vertx.getOrCreateContext();
    on(context, () -> {
      deadlines.add(new Named("here"), now() + 600_000 * MS);
      return null;
    });
    on(other, () -> {
      deadlines.add(new Named("there"), now() + 20 * MS);
      return null;
    });
    assertThat(on(context, deadlines::listed)).isOne();
    await().atMost(Duration.ofSeconds(5)).until(() -> expired.contains("there"));
    assertThat(on(other, deadlines::listed)).isZero();
    assertThat(on(context, deadlines::listed)).isOne();
  }

  @Test
  void offAnEventLoopEntriesShareOneListAndTimerAndExpireOnTheFacilitysLoop() {
    List<String> threads = new CopyOnWriteArrayList<>();
    long[] deadlineAndSeen = new long[2];
    Named soon = new Named("soon") {
      @Override
      protected void expired() {
        deadlineAndSeen[1] = System.nanoTime() + skew.get();
        threads.add(Thread.currentThread().getName() + " " + Context.isOnEventLoopThread());
        super.expired();
      }
    };
    Named cancelled = new Named("cancelled");
    Named answeredElsewhere = new Named("answeredElsewhere");
    deadlines.add(cancelled, now() + 60_000 * MS); // the test thread: no context
    deadlines.add(answeredElsewhere, now() + 60_000 * MS);
    assertThat(cancelled.watched()).isTrue();
    assertThat(deadlines.listed()).as("the off-loop list").isEqualTo(2);
    assertThat(deadlines.armed()).isTrue();
    assertThat(on(context, deadlines::listed)).as("not the context's").isZero();
    assertThat(cancelled.remove()).isTrue();
    assertThat(on(context, answeredElsewhere::remove)).as("removed on a loop, as a local call's answer is").isTrue();
    assertThat(deadlines.listed()).isZero();
    deadlineAndSeen[0] = now() + 100 * MS;
    deadlines.add(soon, deadlineAndSeen[0]); // earlier than the armed timer's: re-armed for it
    await().atMost(Duration.ofSeconds(10)).until(() -> expired.contains("soon"));
    assertThat(expired).containsExactly("soon");
    assertThat(deadlineAndSeen[1]).as("never early").isGreaterThanOrEqualTo(deadlineAndSeen[0]);
    assertThat(threads).singleElement().asString().endsWith(" true");

    // A worker thread of a context joins the same list.
    String[] seen = new String[1];
    vertx.executeBlocking(() -> {
      deadlines.add(new Named("worker"), now() + 1_000 * MS);
      seen[0] = String.valueOf(deadlines.listed());
      return null;
    }).await();
    assertThat(seen[0]).isEqualTo("1");
    await().atMost(Duration.ofSeconds(10)).until(() -> expired.contains("worker"));
    await().atMost(Duration.ofSeconds(10)).until(() -> !deadlines.armed());
  }

  @Test
  void aVertxInstanceHasOneFacility() {
    Deadlines shared = Deadlines.of(vertx);
    assertThat(Deadlines.of(vertx)).isSameAs(shared);
    Vertx other = Vertx.vertx();
    try {
      assertThat(Deadlines.of(other)).isNotSameAs(shared);
    } finally {
      other.close().await();
    }
    // Two layers adding on one context (a gateway call, then the actor call it makes) share its list and timer.
    int listed = on(context, () -> {
      long now = shared.clock().getAsLong();
      Deadlines.of(vertx).add(new Named("gateway"), now + 60_000 * MS);
      Deadlines.of(vertx).add(new Named("actor call"), now + 61_000 * MS);
      return shared.listed();
    });
    assertThat(listed).isEqualTo(2);
  }

  @Test
  void aCancelFromAnotherThreadLeavesTheEntryToExpireWhereItWasAdded() {
    boolean[] settled = new boolean[1];
    List<Boolean> sawSettled = new CopyOnWriteArrayList<>();
    Deadlines.Entry e = new Deadlines.Entry() {
      @Override
      protected void expired() {
        sawSettled.add(settled[0]);
      }
    };
    on(context, () -> {
      deadlines.add(e, now() + 30 * MS);
      return null;
    });
    settled[0] = true;
    assertThat(e.remove()).as("not the list's thread").isFalse();
    await().atMost(Duration.ofSeconds(5)).until(() -> sawSettled.size() == 1);
    assertThat(sawSettled).containsExactly(true);
  }

  @Test
  void anExpiryMayAddAgain() {
    List<Long> times = new CopyOnWriteArrayList<>();
    Deadlines.Entry e = new Deadlines.Entry() {
      @Override
      protected void expired() {
        times.add(deadline());
        if (times.size() < 3) {
          deadlines.add(this, now() + 5 * MS);
        }
      }
    };
    on(context, () -> {
      deadlines.add(e, now() + 5 * MS);
      return null;
    });
    await().atMost(Duration.ofSeconds(5)).until(() -> times.size() == 3);
    assertThat(on(context, deadlines::armed)).isFalse();
    assertThat(times).isSorted();
  }

  @Test
  void addingAWatchedEntryAgainIsRefused() {
    Named a = new Named("a");
    String err = on(context, () -> {
      deadlines.add(a, now() + 600_000 * MS);
      try {
        deadlines.add(a, now() + 1);
        return "none";
      } catch (IllegalStateException ex) {
        return ex.getMessage();
      } finally {
        a.remove();
      }
    });
    assertThat(err).contains("already watched");
  }

  @Test
  void tenThousandEntriesShareOneTimerAndExpireInOrder() {
    int n = 10_000;
    List<Named> entries = new ArrayList<>();
    on(context, () -> {
      long now = now();
      for (int i = 0; i < n; i++) {
        Named e = new Named(Integer.toString(i));
        entries.add(e);
        deadlines.add(e, now + 60_000 * MS + i * 1_000L); // in order, as with one timeout
      }
      for (int i = 0; i < n; i += 2) {
        entries.get(i).remove(); // answered in time: O(1) each
      }
      return null;
    });
    assertThat(on(context, deadlines::listed)).isEqualTo(n / 2);
    skew.addAndGet(120_000 * MS);
    on(context, () -> {
      deadlines.add(new Named("trigger"), now() - 600_000 * MS); // an earlier head brings the timer forward
      return null;
    });
    await().atMost(Duration.ofSeconds(10)).until(() -> expired.size() == n / 2 + 1);
    List<String> odd = new ArrayList<>();
    for (int i = 1; i < n; i += 2) {
      odd.add(Integer.toString(i));
    }
    assertThat(expired.get(0)).isEqualTo("trigger");
    assertThat(expired.subList(1, n / 2 + 1)).containsExactlyElementsOf(odd);
    assertThat(on(context, deadlines::armed)).isFalse();
  }

  /**
   * Vert.x runs each HTTP request on a duplicated context of the connection's loop: a deadline added on one
   * request's context and removed on another's (a reply settling on the loop) must leave the list, or every
   * entry stays listed, holding its call, until its deadline.
   */
  @Test
  void anEntryAddedOnOneDuplicatedContextIsRemovedOnAnotherOfTheSameLoop() {
    ContextInternal root = (ContextInternal) context;
    Context first = root.duplicate();
    Context second = root.duplicate();
    Named a = new Named("a");
    on(first, () -> {
      deadlines.add(a, now() + 600_000 * MS);
      return null;
    });
    assertThat(on(second, deadlines::listed)).as("one list per loop, seen from every duplicate").isOne();
    assertThat(on(second, a::remove)).isTrue();
    assertThat(on(first, deadlines::listed)).isZero();
    assertThat(a.watched()).isFalse();
  }

  /** A confined facility on timers the test fires: one schedule for many in-order deadlines. */
  @Test
  void aConfinedListArmsOnceForInOrderDeadlinesAndRunsAfterExpiries() {
    AtomicLong clock = new AtomicLong(1_000 * MS);
    List<Runnable> tasks = new ArrayList<>();
    List<Long> delays = new ArrayList<>();
    List<Long> cancelled = new ArrayList<>();
    Timers timers = recording(tasks, delays, cancelled);
    int[] sweeps = new int[1];
    Deadlines confined = Deadlines.confined(timers, clock::get, () -> sweeps[0]++);
    for (int i = 0; i < 1000; i++) {
      confined.add(new Named("r" + i), clock.get() + 100 * MS + i);
    }
    assertThat(tasks).as("one timer for all").hasSize(1);
    assertThat(delays).containsExactly(100 * MS);
    tasks.get(0).run(); // early: nothing due, waits again
    assertThat(expired).isEmpty();
    assertThat(tasks).hasSize(2);
    clock.addAndGet(100 * MS + 499);
    tasks.get(1).run();
    assertThat(expired).hasSize(500).startsWith("r0", "r1");
    assertThat(sweeps[0]).isOne();
    assertThat(confined.listed()).isEqualTo(500);
    confined.clear();
    assertThat(confined.listed()).isZero();
    assertThat(cancelled).as("clear() stops the timer").hasSize(1);
    assertThat(confined.armed()).isFalse();
  }
}
