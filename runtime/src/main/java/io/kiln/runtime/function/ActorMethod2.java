package io.kiln.runtime.function;

import java.io.Serializable;

/** A two-argument actor method returning a value. */
@FunctionalInterface
public interface ActorMethod2<T, A, B, R> extends Serializable {
  R apply(T actor, A a, B b) throws Exception;
}
