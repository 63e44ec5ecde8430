package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.testing.TestNodes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class TaskTest {

  static KilnRuntime runtime;
  static final Map<String, AtomicInteger> CALLS = new ConcurrentHashMap<>();
  static final AtomicInteger SLOT_NOW = new AtomicInteger();
  static final AtomicInteger SLOT_MAX = new AtomicInteger();
  static final CountDownLatch SLOT_GATE = new CountDownLatch(1);

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("tasks", Resources.cpu(4).with("fetch_slot", 2));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  static int square(int x) {
    return x * x;
  }

  static String concat(String a, String b) {
    return a + b;
  }

  static String node() {
    return "ran";
  }

  static int failTwiceThenSucceed(String tag) {
    int n = CALLS.computeIfAbsent(tag, t -> new AtomicInteger()).incrementAndGet();
    if (n <= 2) {
      throw new IllegalStateException("transient failure " + n);
    }
    return n;
  }

  static int alwaysFail(String tag) {
    CALLS.computeIfAbsent(tag, t -> new AtomicInteger()).incrementAndGet();
    throw new IllegalStateException("always fails");
  }

  static int slot(int i) throws InterruptedException {
    int n = SLOT_NOW.incrementAndGet();
    SLOT_MAX.accumulateAndGet(n, Math::max);
    try {
      SLOT_GATE.await(30, TimeUnit.SECONDS);
      return i;
    } finally {
      SLOT_NOW.decrementAndGet();
    }
  }

  @Test
  void tasksRunAndReturnResults() {
    assertThat(result(runtime.task(TaskTest::square, 7).remote())).isEqualTo(49);
    assertThat(result(runtime.task(TaskTest::concat, "a", "b").remote())).isEqualTo("ab");
    assertThat(result(runtime.task(TaskTest::node).remote())).isEqualTo("ran");
  }

  @Test
  void futureArgumentsAreResolvedBeforeDispatch() {
    CompletableFuture<Integer> later = new CompletableFuture<>();
    CompletionStage<Integer> chained = runtime.task(TaskTest::square, later).remote();
    assertThat(chained.toCompletableFuture()).isNotDone();
    later.complete(5);
    assertThat(result(chained)).isEqualTo(25);
    CompletionStage<Integer> first = runtime.task(TaskTest::square, 3).remote();
    assertThat(result(runtime.task(TaskTest::square, first).remote())).isEqualTo(81);
  }

  @Test
  void applicationExceptionsAreNotRetriedByDefault() {
    Throwable t = failure(runtime.task(TaskTest::alwaysFail, "no-retry").remote());
    assertThat(t).isInstanceOf(IllegalStateException.class).hasMessage("always fails");
    assertThat(CALLS.get("no-retry").get()).isEqualTo(1);
  }

  @Test
  void retryExceptionsRetriesUpToMaxRetries() {
    assertThat(result(runtime.task(TaskTest::failTwiceThenSucceed, "retry").retryExceptions(true).remote()))
        .isEqualTo(3);
    Throwable t = failure(runtime.task(TaskTest::alwaysFail, "retry-2").retryExceptions(true).maxRetries(2).remote());
    assertThat(t).hasMessage("always fails");
    assertThat(CALLS.get("retry-2").get()).isEqualTo(3);
  }

  @Test
  void customResourceSlotsLimitConcurrency() {
    List<CompletionStage<Integer>> runs = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      runs.add(runtime.task(TaskTest::slot, i).resources(Resources.of("fetch_slot", 1)).remote());
    }
    await().until(() -> SLOT_NOW.get() == 2);
    assertThat(runs).noneMatch(r -> r.toCompletableFuture().isDone());
    SLOT_GATE.countDown();
    for (int i = 0; i < 6; i++) {
      assertThat(result(runs.get(i))).isEqualTo(i);
    }
    assertThat(SLOT_MAX.get()).isEqualTo(2);
  }

  @Test
  void infeasibleTaskFailsAtOnce() {
    Throwable t = failure(runtime.task(TaskTest::square, 1).resources(Resources.gpu(1)).remote());
    assertThat(t).isInstanceOf(InfeasibleResourcesException.class);
  }
}
