package io.kiln.runtime.function;

import java.io.Serializable;

/** A two-argument task function, normally a static method reference. */
@FunctionalInterface
public interface TaskFunction2<A, B, R> extends Serializable {
  R apply(A a, B b) throws Exception;
}
