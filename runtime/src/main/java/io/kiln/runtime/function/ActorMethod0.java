package io.kiln.runtime.function;

import java.io.Serializable;

/** An actor method returning a value, e.g. {@code Counter::get}. */
@FunctionalInterface
public interface ActorMethod0<T, R> extends Serializable {
  R apply(T actor) throws Exception;
}
