package io.kiln.runtime.function;

import java.io.Serializable;

/** A one-argument actor constructor. */
@FunctionalInterface
public interface ActorFactory1<A, T> extends Serializable {
  T create(A a) throws Exception;
}
