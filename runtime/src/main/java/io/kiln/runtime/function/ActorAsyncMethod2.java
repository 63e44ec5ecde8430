package io.kiln.runtime.function;

import java.io.Serializable;
import java.util.concurrent.CompletionStage;
/** A two-argument asynchronous actor method. */
@FunctionalInterface
public interface ActorAsyncMethod2<T, A, B, R> extends Serializable {
  CompletionStage<R> apply(T actor, A a, B b) throws Exception;
}
