package io.kiln.gateway.spi;

import java.util.Optional;

/**
 * Maps a data key (a request's {@code data_key} parameter, e.g. a cached input's id) to the node that holds
 * the data, so the request runs where its data already is. Must not block; may be called from any thread.
 */
@FunctionalInterface
public interface DataLocator {

  /** A locator that knows no keys: requests are routed by load alone. */
  DataLocator NONE = key -> Optional.empty();

  /** The node holding the data, or empty if unknown (then locality plays no part in routing). */
  Optional<String> nodeFor(String dataKey);
}
