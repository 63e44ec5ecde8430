package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.time.Deadlines;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway's calls' deadlines on the runtime's {@link Deadlines}, one list and one timer per event-loop context:
 * each expires once, at its time, unless removed.
 */
class CallDeadlinesTest {

  private final Vertx vertx = Vertx.vertx();
  private final Deadlines deadlines = Deadlines.create(vertx, System::nanoTime);
  private final List<String> expired = new CopyOnWriteArrayList<>();

  @AfterEach
  void close() throws Exception {
    vertx.close().await(30, TimeUnit.SECONDS);
  }

  private final class Named extends Deadlines.Entry {
    final String name;
    final long addedAt = System.nanoTime();
    volatile long expiredAfterNanos = -1;

    Named(String name) {
      this.name = name;
    }

    @Override
    protected void expired() {
      expiredAfterNanos = System.nanoTime() - addedAt;
      expired.add(name);
    }
  }

  private Named add(Context ctx, String name, long millis) {
    Named e = new Named(name);
    deadlines.add(e, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis));
    return e;
  }

  @Test
  void entriesExpireInDeadlineOrderNotBeforeTheirTimeAndRemovedOnesNever() {
    Context ctx = vertx.getOrCreateContext();
    List<Named> entries = new ArrayList<>();
    ctx.runOnContext(v -> {
      entries.add(add(ctx, "late", 600));
      entries.add(add(ctx, "early", 150)); // becomes the head: the timer is re-armed for it
      entries.add(add(ctx, "removed", 300));
      entries.add(add(ctx, "middle", 400));
      entries.get(2).remove();
      entries.get(2).remove(); // idempotent
    });
    await().atMost(Duration.ofSeconds(30)).until(() -> expired.size() == 3);
    assertThat(expired).containsExactly("early", "middle", "late");
    for (Named e : entries) {
      if (!e.name.equals("removed")) {
        assertThat(e.expiredAfterNanos).as(e.name).isGreaterThanOrEqualTo(0);
      }
    }
    assertThat(entries.get(0).expiredAfterNanos).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(600));
    assertThat(entries.get(1).expiredAfterNanos).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150));
    assertThat(entries.get(3).expiredAfterNanos).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(400));
    assertThat(entries.get(2).expiredAfterNanos).isEqualTo(-1);
  }

  @Test
  void ofManyCallsAnsweredInTimeOnlyTheUnansweredOneExpiresAndTheListEmptiesAgain() {
    Context ctx = vertx.getOrCreateContext();
    ctx.runOnContext(v -> {
      List<Named> all = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        all.add(add(ctx, "call-" + i, 200));
      }
      for (int i = 0; i < all.size(); i++) {
        if (i != 5_000) {
          all.get(i).remove(); // answered, in order and out of it
        }
      }
    });
    await().atMost(Duration.ofSeconds(30)).until(() -> expired.size() == 1);
    assertThat(expired).containsExactly("call-5000");
    // A later call is served by the same list and a fresh timer.
    ctx.runOnContext(v -> add(ctx, "after", 50));
    await().atMost(Duration.ofSeconds(30)).until(() -> expired.size() == 2);
    assertThat(expired).containsExactly("call-5000", "after");
  }

  @Test
  void anExpiryThatAddsACallStillGetsItsTimer() {
    Context ctx = vertx.getOrCreateContext();
    ctx.runOnContext(v -> deadlines.add(new Deadlines.Entry() {
      @Override
      protected void expired() {
        expired.add("first");
        add(ctx, "retry", 50);
      }
    }, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50)));
    await().atMost(Duration.ofSeconds(30)).until(() -> expired.size() == 2);
    assertThat(expired).containsExactly("first", "retry");
  }

  @Test
  void offItsContextACallJoinsTheOffLoopListAndRemovingItUnlinksIt() {
    Context ctx = vertx.getOrCreateContext();
    Named kept = add(ctx, "off-loop", 100); // from the test thread, not the context's
    Named removed = add(ctx, "off-loop-removed", 100);
    removed.remove();
    await().atMost(Duration.ofSeconds(30)).until(() -> expired.contains("off-loop"));
    assertThat(kept.expiredAfterNanos).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
    ctx.runOnContext(v -> add(ctx, "marker", 300)); // later than the removed one's deadline
    await().atMost(Duration.ofSeconds(30)).until(() -> expired.contains("marker"));
    assertThat(expired).doesNotContain("off-loop-removed");
  }
}
