package io.kiln.runtime.gpu;

/** The node has a GPU tool but it could not say which GPUs there are: the GPUs cannot be used as they are. */
public final class GpuDiscoveryException extends RuntimeException {

  public GpuDiscoveryException(String message) {
    super(message);
  }

  public GpuDiscoveryException(String message, Throwable cause) {
    super(message, cause);
  }
}
