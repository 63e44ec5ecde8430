package io.kiln.runtime.function;

import java.io.Serializable;

/** A no-argument actor constructor, e.g. {@code Counter::new}. */
@FunctionalInterface
public interface ActorFactory0<T> extends Serializable {
  T create() throws Exception;
}
