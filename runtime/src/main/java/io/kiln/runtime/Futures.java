package io.kiln.runtime;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * What every module repeats about {@link CompletionStage}s, the async type of Kiln's public APIs (see this
 * package's documentation for the rule): getting at the real failure behind the wrappers futures add, and
 * waiting for many stages at once.
 *
 * <p>Threading: nothing here blocks; the combined stages complete on the thread that completes the last
 * input, as {@link CompletableFuture#allOf} does.
 */
public final class Futures {

  private Futures() {
  }

  /**
   * The failure behind the wrappers futures add: strips {@link CompletionException}s and
   * {@link ExecutionException}s (any nesting) while they have a cause. Anything else, null included, comes
   * back as is.
   */
  public static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /**
   * As {@link #unwrap} but strips {@link CompletionException}s only: an {@link ExecutionException} (the
   * wrapper of a blocking {@code get}) is kept. For callers that never strip more than what a stage's
   * callbacks add.
   */
  public static Throwable unwrapCompletion(Throwable t) {
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /**
   * Completes once every stage has; fails as {@link CompletableFuture#allOf} does (after all have completed,
   * with a {@link CompletionException} around one of the failures). No stages: completes at once.
   */
  public static CompletionStage<Void> allOf(Collection<? extends CompletionStage<?>> stages) {
    return CompletableFuture.allOf(stages.stream().map(CompletionStage::toCompletableFuture)
        .toArray(CompletableFuture[]::new));
  }

  /**
   * The results of {@code stages}, in their order (nulls kept), once every stage has completed; fails as
   * {@link #allOf} does. The list is unmodifiable.
   */
  public static <T> CompletionStage<List<T>> all(List<? extends CompletionStage<? extends T>> stages) {
    List<CompletableFuture<? extends T>> futures = new ArrayList<>(stages.size());
    for (CompletionStage<? extends T> s : stages) {
      futures.add(s.toCompletableFuture());
    }
    return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
      List<T> values = new ArrayList<>(futures.size());
      for (CompletableFuture<? extends T> f : futures) {
        values.add(f.join());
      }
      return Collections.unmodifiableList(values);
    });
  }
}
