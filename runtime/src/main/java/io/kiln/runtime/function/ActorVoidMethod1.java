package io.kiln.runtime.function;

import java.io.Serializable;

/** A one-argument actor method returning nothing. */
@FunctionalInterface
public interface ActorVoidMethod1<T, A> extends Serializable {
  void apply(T actor, A a) throws Exception;
}
