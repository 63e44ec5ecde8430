package io.kiln.runtime.function;

import java.io.Serializable;
import java.util.concurrent.CompletionStage;
/** A one-argument asynchronous actor method. */
@FunctionalInterface
public interface ActorAsyncMethod1<T, A, R> extends Serializable {
  CompletionStage<R> apply(T actor, A a) throws Exception;
}
