package io.kiln.runtime.function;

import java.io.Serializable;

/** A one-argument task function, normally a static method reference. */
@FunctionalInterface
public interface TaskFunction1<A, R> extends Serializable {
  R apply(A a) throws Exception;
}
