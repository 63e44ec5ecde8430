package io.kiln.gateway;

/**
 * Limits of the gateway's streaming endpoints ({@code generate}, {@code generate_stream}, gRPC
 * {@code ModelStreamInfer}). Immutable; {@link KilnGateway#streamOptions} swaps them at any time.
 *
 * @param maxStreams streams this gateway holds open at once; one more is refused 503 with {@code Retry-After}
 *     (gRPC: an UNAVAILABLE error message)
 * @param window chunks a worker may send ahead of what the client has taken (the per-stream buffer bound; the
 *     worker pauses its model beyond it)
 * @param maxChunkBytes the most tensor bytes one chunk may hold; a larger chunk ends its stream with an error
 */
public record StreamOptions(int maxStreams, int window, int maxChunkBytes) {

  public static final int DEFAULT_MAX_STREAMS = 1024;
  public static final int DEFAULT_WINDOW = 16;
  public static final int DEFAULT_MAX_CHUNK_BYTES = 4 << 20;
  public static final StreamOptions DEFAULTS = new StreamOptions(DEFAULT_MAX_STREAMS, DEFAULT_WINDOW,
      DEFAULT_MAX_CHUNK_BYTES);

  /** @throws IllegalArgumentException naming the field when a value is below 1 (or the window over 4096) */
  public StreamOptions {
    if (maxStreams < 1) {
      throw new IllegalArgumentException("maxStreams: must be at least 1, got " + maxStreams);
    }
    if (window < 1 || window > 4096) {
      throw new IllegalArgumentException("window: must be in 1..4096, got " + window);
    }
    if (maxChunkBytes < 1) {
      throw new IllegalArgumentException("maxChunkBytes: must be at least 1, got " + maxChunkBytes);
    }
  }
}
