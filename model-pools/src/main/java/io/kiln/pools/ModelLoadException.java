package io.kiln.pools;

/**
 * A model could not be loaded: missing or ambiguous files, an engine that does not start, weights that do not fit
 * the architecture, a signature or warm-up outputs that contradict the spec, or a warm-up batch that left the runner
 * unusable (a Python model's process died). A warm-up batch the model merely rejects is no load failure (see
 * {@link ModelRunners#load}). The message names the model's uri and the reason; retrying without changing the spec
 * or the files will fail again.
 */
public class ModelLoadException extends RuntimeException {

  public ModelLoadException(String message) {
    super(message);
  }

  public ModelLoadException(String message, Throwable cause) {
    super(message, cause);
  }
}
