package io.kiln.pools;

/**
 * The engine or model failed while running a batch that passed validation (native error, out of memory,
 * outputs that contradict the spec, or a built-in's simulated crash). Unlike {@link InferenceException}
 * it says nothing about the requests: the worker that saw it should be treated as failed, and its
 * requests may be retried elsewhere.
 */
public class ModelExecutionException extends RuntimeException {

  public ModelExecutionException(String message) {
    super(message);
  }

  public ModelExecutionException(String message, Throwable cause) {
    super(message, cause);
  }
}
