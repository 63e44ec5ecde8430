package io.kiln.runtime.function;

import java.io.Serializable;

/** A three-argument task function, normally a static method reference. */
@FunctionalInterface
public interface TaskFunction3<A, B, C, R> extends Serializable {
  R apply(A a, B b, C c) throws Exception;
}
