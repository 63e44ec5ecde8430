package io.kiln.runtime.function;

import java.io.Serializable;
import java.util.concurrent.CompletionStage;
/** An asynchronous actor method: it returns at once with a future; up to {@code max_concurrency} may be in progress. */
@FunctionalInterface
public interface ActorAsyncMethod0<T, R> extends Serializable {
  CompletionStage<R> apply(T actor) throws Exception;
}
