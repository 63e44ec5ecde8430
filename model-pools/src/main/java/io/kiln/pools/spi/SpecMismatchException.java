package io.kiln.pools.spi;

import io.kiln.pools.ModelExecutionException;

/**
 * The model ran, but what it returned contradicts the spec: another number of outputs, a datatype, a rank or a fixed
 * dimension the spec does not declare. To the pool it is a {@link ModelExecutionException} like any other (it crosses
 * the wire as one); to warm-up it means the spec does not fit the model, so every request would fail alike, and the
 * load fails instead of the model serving nothing but errors. An engine throws it from its runner's forward pass;
 * {@link AbstractModelRunner} throws it for outputs that contradict the spec.
 */
public final class SpecMismatchException extends ModelExecutionException {

  public SpecMismatchException(String message) {
    super(message);
  }
}
