package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.time.Deadlines;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Local calls' deadlines: each call's {@link LocalReply} on its caller's event-loop list in the runtime's one
 * timer facility, not a timer per call; a clock the test skews makes them due without waiting.
 */
@Tag("slow")
class CallDeadlinesTest {

  private static final long MS = 1_000_000;

  private final Vertx vertx = Vertx.vertx();
  private final Context context = vertx.getOrCreateContext();
  private final AtomicLong skew = new AtomicLong();
  private final Deadlines deadlines = Deadlines.create(vertx, () -> System.nanoTime() + skew.get());
  private final List<Invocation> waiting = new ArrayList<>();
  private final ActorHandleImpl<Object> handle = new ActorHandleImpl<>(null, "a1", "default", null, "n1",
      Object.class, Duration.ofMillis(100));

  @AfterEach
  void close() {
    vertx.close().await();
  }

  private <T> T on(Supplier<T> body) {
    CompletableFuture<T> f = new CompletableFuture<>();
    context.runOnContext(v -> f.complete(body.get()));
    return f.orTimeout(10, TimeUnit.SECONDS).join();
  }

  /** A call made on the context, as CallPath makes it; the invocation joins {@link #waiting}. */
  private CompletableFuture<Object> call(long deadlineFromNow) {
    CompletableFuture<Object> f = new CompletableFuture<>();
    LocalReply reply = new LocalReply(f, context, Integer.class, handle);
    deadlines.add(reply, deadlines.clock().getAsLong() + deadlineFromNow);
    waiting.add(new Invocation(null, reply));
    return f;
  }

  @Test
  void aThousandCallsShareOneListAndAllTimeOutWithTheEventBusMessage() {
    List<CompletableFuture<Object>> calls = on(() -> {
      List<CompletableFuture<Object>> c = new ArrayList<>();
      for (int i = 0; i < 1000; i++) {
        c.add(call(60_000 * MS)); // in increasing order, as from one handle
      }
      return c;
    });
    assertThat(on(deadlines::listed)).isEqualTo(1000);
    skew.addAndGet(120_000 * MS);
    on(() -> call(-180_000 * MS)); // an earlier head brings the one timer forward
    await().atMost(Duration.ofSeconds(5)).until(() -> calls.stream().allMatch(CompletableFuture::isDone));
    for (CompletableFuture<Object> c : calls) {
      assertThat(failure(c)).isInstanceOf(CallTimeoutException.class)
          .hasMessage("no reply from actor ActorHandle[a1 on n1] within PT0.1S");
    }
    assertThat(waiting).hasSize(1001); // they still run, as with the event bus; their answers go nowhere
    waiting.get(0).reply(ReplyMessage.ok(7, Integer.class));
    assertThat(failure(calls.get(0))).isInstanceOf(CallTimeoutException.class);
    assertThat(on(deadlines::armed)).as("nothing left to watch: no timer").isFalse();
  }

  @Test
  void onlyWhatIsDueFails() {
    CompletableFuture<Object> late = on(() -> call(60_000 * MS));
    CompletableFuture<Object> early = on(() -> call(20 * MS)); // an earlier deadline moves the timer forward
    await().atMost(Duration.ofSeconds(5)).until(early::isDone);
    assertThat(failure(early)).isInstanceOf(CallTimeoutException.class);
    assertThat(late).isNotDone();
    assertThat(on(deadlines::listed)).isOne();
  }

  @Test
  void anAnsweredCallUnlinksItsDeadline() {
    CompletableFuture<Object> answered = on(() -> call(60_000 * MS));
    // Answered from another thread (an actor's worker), completed on the caller's context, unlinked there.
    waiting.get(0).reply(ReplyMessage.ok(7, Integer.class));
    assertThat(io.kiln.runtime.testing.Await.result(answered)).isEqualTo(7);
    await().atMost(Duration.ofSeconds(5)).until(() -> on(deadlines::listed) == 0);
    assertThat(on(deadlines::armed)).as("left armed for the next call; it stops once it found nothing due").isTrue();
  }

  @Test
  void callersOffAnEventLoopShareTheOffLoopListAndTheAnswerUnlinksThere() {
    CompletableFuture<Object> c = call(2_000 * MS); // the test thread: no context
    CompletableFuture<Object> answered = call(60_000 * MS);
    assertThat(on(deadlines::listed)).as("not the context's list").isZero();
    assertThat(deadlines.listed()).as("the off-loop one").isEqualTo(2);
    waiting.get(1).reply(ReplyMessage.ok(7, Integer.class)); // completed on the caller's context, unlinked there
    assertThat(io.kiln.runtime.testing.Await.result(answered)).isEqualTo(7);
    await().atMost(Duration.ofSeconds(10)).until(c::isDone);
    assertThat(failure(c)).isInstanceOf(CallTimeoutException.class);
    assertThat(deadlines.listed()).isZero();
  }
}
