package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

class FuturesTest {

  private final IllegalStateException cause = new IllegalStateException("boom");

  @Test
  void unwrapStripsNestedCompletionAndExecutionExceptions() {
    Throwable wrapped = new CompletionException(new ExecutionException(new CompletionException(cause)));

    assertThat(Futures.unwrap(wrapped)).isSameAs(cause);
  }

  @Test
  void unwrapKeepsAWrapperWithoutCauseAndAnythingElse() {
    CompletionException empty = new CompletionException("no cause", null);
    RuntimeException other = new RuntimeException(cause);

    assertThat(Futures.unwrap(empty)).isSameAs(empty);
    assertThat(Futures.unwrap(other)).isSameAs(other);
    assertThat(Futures.unwrap(cause)).isSameAs(cause);
    assertThat(Futures.unwrap(null)).isNull();
  }

  @Test
  void unwrapCompletionStopsAtAnExecutionException() {
    ExecutionException execution = new ExecutionException(cause);

    assertThat(Futures.unwrapCompletion(new CompletionException(new CompletionException(cause)))).isSameAs(cause);
    assertThat(Futures.unwrapCompletion(new CompletionException(execution))).isSameAs(execution);
    assertThat(Futures.unwrapCompletion(null)).isNull();
  }

  @Test
  void unwrapGetsTheCauseOfAFailedDependentStage() {
    CompletableFuture<Integer> failed = CompletableFuture.<Integer>failedFuture(cause).thenApply(i -> i + 1);

    assertThatThrownBy(failed::join).isInstanceOf(CompletionException.class)
        .satisfies(e -> assertThat(Futures.unwrap(e)).isSameAs(cause))
        .satisfies(e -> assertThat(Futures.unwrapCompletion(e)).isSameAs(cause));
  }

  @Test
  void allOfCompletesOnceEveryStageHas() {
    CompletableFuture<String> a = new CompletableFuture<>();
    CompletableFuture<Integer> b = new CompletableFuture<>();

    CompletableFuture<Void> all = Futures.allOf(List.of(a, b)).toCompletableFuture();
    a.complete("a");
    assertThat(all).isNotDone();
    b.complete(2);

    assertThat(all).isCompletedWithValue(null);
    assertThat(Futures.allOf(List.of()).toCompletableFuture()).isCompletedWithValue(null);
  }

  @Test
  void allOfFailsAfterEveryStageCompletedWithTheFailureWrapped() {
    CompletableFuture<String> a = new CompletableFuture<>();
    CompletableFuture<String> b = new CompletableFuture<>();

    CompletableFuture<Void> all = Futures.allOf(List.of(a, b)).toCompletableFuture();
    a.completeExceptionally(cause);
    assertThat(all).isNotDone();
    b.complete("b");

    assertThatThrownBy(all::join).isInstanceOf(CompletionException.class).hasCause(cause);
  }

  @Test
  void allGivesTheResultsInOrderWithNullsKept() {
    CompletableFuture<String> first = new CompletableFuture<>();
    List<CompletionStage<String>> stages = Arrays.asList(first, CompletableFuture.completedFuture(null),
        CompletableFuture.completedFuture("c"));

    CompletableFuture<List<String>> all = Futures.all(stages).toCompletableFuture();
    assertThat(all).isNotDone();
    first.complete("a");

    assertThat(all.join()).containsExactly("a", null, "c");
    assertThatThrownBy(() -> all.join().add("d")).isInstanceOf(UnsupportedOperationException.class);
    assertThat(Futures.<String>all(List.of()).toCompletableFuture().join()).isEmpty();
  }

  @Test
  void allFailsAsAllOfDoes() {
    CompletionStage<List<Object>> all = Futures.all(List.of(CompletableFuture.completedFuture(1),
        CompletableFuture.failedFuture(cause)));

    assertThatThrownBy(() -> all.toCompletableFuture().join()).isInstanceOf(CompletionException.class)
        .hasCause(cause);
  }
}
