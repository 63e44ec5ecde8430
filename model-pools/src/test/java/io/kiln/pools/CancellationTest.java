package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class CancellationTest {

  @Test
  void aTokenCancelsOnceAndTellsEachListenerOnce() {
    Cancellation c = Cancellation.create();
    List<String> heard = new CopyOnWriteArrayList<>();
    c.onCancel(() -> heard.add("first"));
    c.onCancel(() -> heard.add("second"));
    assertThat(c.isCancelled()).isFalse();
    assertThat(c.reason()).isNull();

    assertThat(c.cancel("client went away")).isTrue();
    assertThat(c.cancel("again")).as("only the first cancel counts").isFalse();

    assertThat(heard).containsExactly("first", "second");
    assertThat(c.isCancelled()).isTrue();
    assertThat(c.reason()).isEqualTo("client went away");
  }

  @Test
  void aListenerAddedAfterTheCancelRunsAtOnce() {
    Cancellation c = Cancellation.create();
    c.cancel("gone");
    AtomicInteger runs = new AtomicInteger();
    c.onCancel(runs::incrementAndGet);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aFailingListenerDoesNotStopTheOthers() {
    Cancellation c = Cancellation.create();
    AtomicInteger runs = new AtomicInteger();
    c.onCancel(() -> {
      throw new IllegalStateException("boom");
    });
    c.onCancel(runs::incrementAndGet);
    assertThat(c.cancel("gone")).isTrue();
    assertThat(runs).hasValue(1);
  }

  @Test
  void noneNeverCancelsAndKeepsNoListener() {
    AtomicInteger runs = new AtomicInteger();
    Cancellation.NONE.onCancel(runs::incrementAndGet);
    assertThat(Cancellation.NONE.cancel("gone")).isFalse();
    assertThat(Cancellation.NONE.isCancelled()).isFalse();
    assertThat(Cancellation.NONE.cancellable()).isFalse();
    assertThat(runs).hasValue(0);
    assertThat(RequestContext.of("r", 1).cancellation()).isSameAs(Cancellation.NONE);
  }

  @Test
  void racingRegistrationsAndACancelRunEveryListenerExactlyOnce() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      for (int round = 0; round < 200; round++) {
        Cancellation c = Cancellation.create();
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(4);
        for (int t = 0; t < 3; t++) {
          pool.execute(() -> {
            await(start);
            for (int i = 0; i < 10; i++) {
              c.onCancel(runs::incrementAndGet);
            }
            done.countDown();
          });
        }
        pool.execute(() -> {
          await(start);
          c.cancel("race");
          done.countDown();
        });
        start.countDown();
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(runs).as("round " + round).hasValue(30);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aContextsCopiesShareItsToken() {
    Cancellation c = Cancellation.create();
    RequestContext ctx = RequestContext.of("r", 1, null, RequestContext.Priority.NORMAL, c);
    assertThat(ctx.withPriority(RequestContext.Priority.LOW).cancellation()).isSameAs(c);
    assertThat(ctx.withTrace(null).cancellation()).isSameAs(c);
    assertThat(ctx.withCancellation(c)).isSameAs(ctx);
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
