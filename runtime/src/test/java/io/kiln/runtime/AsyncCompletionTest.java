package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.testing.TestNodes;
import io.vertx.core.Vertx;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An event-loop actor's asynchronous method whose future completes on the actor's own loop: completed by a task
 * there (a timer), the call is finished at once and the next one starts; completed from inside another of the
 * actor's methods, the next call must wait until that method returned (never nested in it).
 */
class AsyncCompletionTest {

  static KilnRuntime runtime;

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("async-completion", Resources.cpu(2));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  /** Records whether one of its methods ever started while another was still running. */
  public static final class Gate {
    private CompletableFuture<Integer> pending;
    private boolean inMethod;
    private boolean nested;

    public CompletableFuture<Integer> waitForRelease() {
      enter();
      pending = new CompletableFuture<>();
      inMethod = false;
      return pending;
    }

    /** Completes after {@code millis} from a timer on the actor's loop, outside any of its methods. */
    public CompletableFuture<Integer> later(long millis) {
      enter();
      CompletableFuture<Integer> f = new CompletableFuture<>();
      Vertx.currentContext().owner().setTimer(millis, id -> f.complete(1));
      inMethod = false;
      return f;
    }

    /**
     * Completes from blocking code the actor's loop started ({@code executeBlocking}: a worker thread on which
     * Vert.x makes the loop's context current); records the thread the next call's method then runs on.
     */
    public CompletableFuture<Integer> fromBlockingCode() {
      enter();
      CompletableFuture<Integer> f = new CompletableFuture<>();
      Vertx.currentContext().owner().executeBlocking(() -> {
        f.complete(2);
        return null;
      });
      inMethod = false;
      return f;
    }

    /** The name of the thread this method runs on. */
    public String thread() {
      enter();
      inMethod = false;
      return Thread.currentThread().getName();
    }

    /** Completes the pending future from inside this method. */
    public int release(int v) {
      enter();
      pending.complete(v);
      inMethod = false;
      return v;
    }

    public boolean nested() {
      enter();
      inMethod = false;
      return nested;
    }

    private void enter() {
      if (inMethod) {
        nested = true;
      }
      inMethod = true;
    }
  }

  @Test
  void aFutureCompletedInsideAnActorMethodDoesNotStartTheNextCallInsideIt() {
    ActorHandle<Gate> g = result(runtime.actor(Gate::new).mode(ExecutionMode.EVENT_LOOP).maxConcurrency(2).remote());
    CompletionStage<Integer> waiting = g.callAsync(Gate::waitForRelease);
    CompletionStage<Integer> later = g.callAsync(Gate::later, 300L);
    // Both slots are taken: these two wait in the mailbox until the timer completes `later`.
    CompletionStage<Integer> release = g.call(Gate::release, 5);
    CompletionStage<Boolean> nested = g.call(Gate::nested);
    assertThat(result(later)).isEqualTo(1);
    assertThat(result(release)).isEqualTo(5);
    assertThat(result(waiting)).isEqualTo(5);
    assertThat(result(nested)).as("a call ran nested in release()").isFalse();
  }

  @Test
  void aFutureCompletedInBlockingCodeTheLoopStartedFinishesOnTheLoopNotTheWorkerThread() {
    ActorHandle<Gate> g = result(runtime.actor(Gate::new).mode(ExecutionMode.EVENT_LOOP).maxConcurrency(1).remote());
    for (int i = 0; i < 20; i++) {
      CompletionStage<Integer> blocking = g.callAsync(Gate::fromBlockingCode);
      CompletionStage<String> next = g.call(Gate::thread); // queued behind it: pumped when it finishes
      assertThat(result(blocking)).isEqualTo(2);
      assertThat(result(next)).as("the next call's thread").startsWith("vert.x-eventloop-thread");
    }
  }

  @Test
  void futuresCompletedByTimersOnTheActorsLoopAnswerEveryQueuedCall() {
    ActorHandle<Gate> g = result(runtime.actor(Gate::new).mode(ExecutionMode.EVENT_LOOP).maxConcurrency(1).remote());
    java.util.List<CompletionStage<Integer>> calls = new java.util.ArrayList<>();
    for (int i = 0; i < 50; i++) {
      calls.add(g.callAsync(Gate::later, 1L));
    }
    calls.forEach(c -> assertThat(result(c)).isEqualTo(1));
    assertThat(result(g.call(Gate::nested))).isFalse();
  }
}
