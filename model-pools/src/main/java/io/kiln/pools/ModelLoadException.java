package io.kiln.pools;

/**
 * A model could not be loaded or failed its warm-up: missing or ambiguous files, an engine that does not
 * start, weights that do not fit the architecture, or outputs that contradict the spec. The message names
 * the model's uri and the reason; retrying without changing the spec or the files will fail again.
 */
public class ModelLoadException extends RuntimeException {

  public ModelLoadException(String message) {
    super(message);
  }

  public ModelLoadException(String message, Throwable cause) {
    super(message, cause);
  }
}
