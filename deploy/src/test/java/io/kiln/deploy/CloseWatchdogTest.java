package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TimeoutPolicy;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** A node's close that outlasts its bound ends the process (here: the exit it is given), never a hang. */
class CloseWatchdogTest {

  private static final TimeoutPolicy SHORT = CloseWatchdog.NODE_CLOSE.withTimeout(Duration.ofMillis(200));

  @Test
  void aCloseStillRunningPastTheBoundExitsWithStatusOneAfterItsLastWords() throws Exception {
    AtomicReference<String> order = new AtomicReference<>("");
    AtomicInteger status = new AtomicInteger(-1);
    Thread t = CloseWatchdog.watch("n3", new CountDownLatch(1), SHORT, () -> order.updateAndGet(o -> o + "before;"),
        s -> {
          order.updateAndGet(o -> o + "exit;");
          status.set(s);
        });
    await().atMost(Duration.ofSeconds(10)).until(() -> status.get() >= 0);
    assertThat(status.get()).isEqualTo(1);
    assertThat(order.get()).isEqualTo("before;exit;");
    t.join(5_000);
    assertThat(t.isAlive()).isFalse();
  }

  @Test
  void aCloseThatEndsInTimeExitsNothing() throws Exception {
    CountDownLatch closed = new CountDownLatch(1);
    AtomicInteger exits = new AtomicInteger();
    Thread t = CloseWatchdog.watch("n3", closed, SHORT, () -> { }, s -> exits.incrementAndGet());
    closed.countDown();
    t.join(5_000);
    assertThat(t.isAlive()).isFalse();
    assertThat(exits.get()).isZero();
  }

  @Test
  void theThreadsNameStateAndFrames() {
    String dump = CloseWatchdog.threads();
    assertThat(dump).contains("\"" + Thread.currentThread().getName() + "\" RUNNABLE")
        .contains("\n    at ");
  }
}
