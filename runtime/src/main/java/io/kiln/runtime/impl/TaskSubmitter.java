package io.kiln.runtime.impl;

import io.kiln.runtime.Futures;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.TaskCreation;
import io.kiln.runtime.TaskOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import java.io.Serializable;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task submission: waits for its future arguments, places the task, and retries it after system
 * failures (node died, no reply) up to {@code max_retries}, and after the function's own exceptions only
 * when {@code retry_exceptions} is set.
 */
final class TaskSubmitter<R> implements TaskCreation<R> {

  private static final Logger LOG = LoggerFactory.getLogger(TaskSubmitter.class);

  private final Placer placer;
  private final CallPath callPath;
  private final Serializable fn;
  private final List<? extends CompletionStage<?>> args;
  private TaskOptions.Builder options = TaskOptions.builder();

  TaskSubmitter(Placer placer, CallPath callPath, Serializable fn, List<? extends CompletionStage<?>> args) {
    this.placer = placer;
    this.callPath = callPath;
    this.fn = fn;
    this.args = args;
  }

  @Override
  public TaskCreation<R> options(TaskOptions o) {
    options = o.toBuilder();
    return this;
  }

  @Override
  public TaskCreation<R> with(UnaryOperator<TaskOptions.Builder> edit) {
    options = edit.apply(options);
    return this;
  }

  @Override
  public CompletionStage<R> remote() {
    TaskOptions o;
    MethodRef method;
    try {
      o = options.build();
      method = Lambdas.resolve(fn);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return Futures.all(args).thenCompose(values -> attempt(method, values.toArray(), o, 0));
  }

  private CompletionStage<R> attempt(MethodRef method, Object[] values, TaskOptions o, int attempt) {
    String taskId = Ids.newId();
    AgentRequests.RunTask req = new AgentRequests.RunTask(taskId, method, fn, values, o.resources(),
        o.timeout().toMillis(), o.strategy());
    DeliveryOptions delivery = new DeliveryOptions().setSendTimeout(o.timeout().toMillis());
    CompletionStage<R> run = placer.place(o.resources(), o.strategy(), o.placementTimeout(),
        "task " + method.displayName(), node -> callPath.request(node, NodeAgent.address(node), req,
            method.resultType(), delivery));
    return run.handle((value, err) -> {
      if (err == null) {
        return CompletableFuture.completedFuture(value);
      }
      Throwable cause = Futures.unwrap(err);
      RetryPolicy policy = o.retryPolicy();
      if (policy.allows(attempt + 1) && (systemFailure(cause) || (o.retryExceptions() && !placementFailure(cause)))) {
        LOG.info("task {} attempt {} failed ({}); retrying under {}", method.displayName(), attempt + 1,
            cause.toString(), policy);
        return attempt(method, values, o, attempt + 1);
      }
      return CompletableFuture.<R>failedFuture(cause);
    }).thenCompose(s -> s);
  }

  private static boolean systemFailure(Throwable t) {
    return t instanceof NodeDiedException || t instanceof ReplyException;
  }

  private static boolean placementFailure(Throwable t) {
    return t instanceof io.kiln.runtime.InfeasibleResourcesException
        || t instanceof io.kiln.runtime.PlacementTimeoutException;
  }

}
