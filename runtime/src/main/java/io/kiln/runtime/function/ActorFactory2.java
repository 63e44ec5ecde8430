package io.kiln.runtime.function;

import java.io.Serializable;

/** A two-argument actor constructor. */
@FunctionalInterface
public interface ActorFactory2<A, B, T> extends Serializable {
  T create(A a, B b) throws Exception;
}
