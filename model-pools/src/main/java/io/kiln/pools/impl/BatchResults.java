package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.kiln.runtime.Futures;
import java.util.List;

/** How to read a worker's answer to a batch: outputs, bad input, or a failed worker. */
final class BatchResults {

  private BatchResults() {
  }

  /**
   * The failure a worker's answer amounts to, or null if {@code results} holds one non-null result per
   * request. A malformed answer counts as a failed worker, since the worker broke its contract.
   */
  static Throwable failureOf(List<List<Tensor>> results, Throwable error, int expected) {
    if (error != null) {
      return Futures.unwrap(error);
    }
    int got = results == null ? -1 : results.size();
    if (got == expected) {
      for (List<Tensor> r : results) { // not contains(null): immutable lists throw on it
        if (r == null) {
          return new IllegalStateException("worker returned a null result in a batch of " + expected);
        }
      }
      return null;
    }
    return new IllegalStateException("worker returned " + got + " results for " + expected + " requests");
  }

  /** Whether the failure blames the inputs (answer the requests with it) rather than the worker. */
  static boolean isInvalidInput(Throwable failure) {
    return failure instanceof InferenceException ie && ie.kind() == InferenceException.Kind.INVALID_INPUT;
  }

  /**
   * Whether the model itself failed this batch and said so (an INTERNAL {@link InferenceException}, e.g. a
   * Python {@code predict} that raised): answer the requests with it; the worker is fine.
   */
  static boolean isModelError(Throwable failure) {
    return failure instanceof InferenceException ie && ie.kind() == InferenceException.Kind.INTERNAL;
  }

  static String describe(Throwable t) {
    return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
  }
}
