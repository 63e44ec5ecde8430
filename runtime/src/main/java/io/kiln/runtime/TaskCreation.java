package io.kiln.runtime;

import java.util.concurrent.CompletionStage;
import java.util.function.UnaryOperator;

/**
 * A pending task submission: set options, then {@link #remote()}. Not thread-safe; use once.
 *
 * @param <R> the task's result type
 */
public interface TaskCreation<R> {

  TaskCreation<R> options(TaskOptions options);

  TaskCreation<R> with(UnaryOperator<TaskOptions.Builder> edit);

  default TaskCreation<R> resources(Resources resources) {
    return with(b -> b.resources(resources));
  }

  default TaskCreation<R> strategy(SchedulingStrategy strategy) {
    return with(b -> b.strategy(strategy));
  }

  default TaskCreation<R> maxRetries(int n) {
    return with(b -> b.maxRetries(n));
  }

  default TaskCreation<R> retryExceptions(boolean retry) {
    return with(b -> b.retryExceptions(retry));
  }

  /**
   * Submits the task once its future arguments have resolved. The result fails with the function's
   * exception (after retries if {@code retryExceptions}), {@link InfeasibleResourcesException},
   * {@link PlacementTimeoutException}, or the system failure of the last attempt.
   */
  CompletionStage<R> remote();
}
