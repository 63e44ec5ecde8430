package io.kiln.runtime.function;

import java.io.Serializable;

/** A two-argument actor method returning nothing. */
@FunctionalInterface
public interface ActorVoidMethod2<T, A, B> extends Serializable {
  void apply(T actor, A a, B b) throws Exception;
}
