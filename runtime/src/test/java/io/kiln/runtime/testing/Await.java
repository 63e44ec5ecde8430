package io.kiln.runtime.testing;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Blocking helpers for tests: wait for a future with a generous bound, unwrap its failure. */
public final class Await {

  /** Long enough for 2 loaded cores; a test that needs it is broken anyway. */
  public static final Duration DEFAULT = Duration.ofSeconds(30);

  private Await() {
  }

  public static <T> T result(CompletionStage<T> stage) {
    return result(stage, DEFAULT);
  }

  public static <T> T result(CompletionStage<T> stage, Duration timeout) {
    try {
      return stage.toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException r) {
        throw r;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(c);
    } catch (TimeoutException e) {
      throw new AssertionError("future did not complete within " + timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The failure of {@code stage}, unwrapped; fails the test if it succeeds. */
  public static Throwable failure(CompletionStage<?> stage) {
    return failure(stage, DEFAULT);
  }

  public static Throwable failure(CompletionStage<?> stage, Duration timeout) {
    try {
      Object v = stage.toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      throw new AssertionError("expected a failure, got " + v);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      while (c instanceof java.util.concurrent.CompletionException && c.getCause() != null) {
        c = c.getCause();
      }
      return c;
    } catch (TimeoutException e) {
      throw new AssertionError("future did not complete within " + timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
