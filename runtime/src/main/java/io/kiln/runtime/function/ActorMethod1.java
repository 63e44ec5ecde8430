package io.kiln.runtime.function;

import java.io.Serializable;

/** A one-argument actor method returning a value. */
@FunctionalInterface
public interface ActorMethod1<T, A, R> extends Serializable {
  R apply(T actor, A a) throws Exception;
}
