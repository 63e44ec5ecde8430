package io.kiln.runtime.function;

import java.io.Serializable;

/** A three-argument actor method returning a value. */
@FunctionalInterface
public interface ActorMethod3<T, A, B, C, R> extends Serializable {
  R apply(T actor, A a, B b, C c) throws Exception;
}
