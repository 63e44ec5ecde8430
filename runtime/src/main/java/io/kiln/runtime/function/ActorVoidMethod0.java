package io.kiln.runtime.function;

import java.io.Serializable;

/** An actor method returning nothing. */
@FunctionalInterface
public interface ActorVoidMethod0<T> extends Serializable {
  void apply(T actor) throws Exception;
}
