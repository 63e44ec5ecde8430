package io.kiln.pipelines;

import java.io.IOException;

/** An input could not be cached: larger than the cache, or everything that could make room is in use. */
public class CacheFullException extends IOException {

  public CacheFullException(String message) {
    super(message);
  }
}
