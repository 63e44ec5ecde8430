package io.kiln.runtime.function;

import java.io.Serializable;

/** A three-argument actor constructor. */
@FunctionalInterface
public interface ActorFactory3<A, B, C, T> extends Serializable {
  T create(A a, B b, C c) throws Exception;
}
