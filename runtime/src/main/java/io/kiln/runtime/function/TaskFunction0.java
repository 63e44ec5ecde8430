package io.kiln.runtime.function;

import java.io.Serializable;

/** A stateless task function, normally a static method reference. */
@FunctionalInterface
public interface TaskFunction0<R> extends Serializable {
  R apply() throws Exception;
}
