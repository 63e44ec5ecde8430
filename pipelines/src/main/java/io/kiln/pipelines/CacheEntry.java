package io.kiln.pipelines;

import java.util.Objects;

/**
 * One input held by a node's {@link NodeCache}.
 *
 * @param key the cache key: lowercase hex SHA-256 of the URI ({@link NodeCache#keyOf})
 * @param uri where it was fetched from
 * @param nodeId the node whose disk holds it
 * @param path the file on that node's disk
 * @param bytes its size
 * @param sha256 lowercase hex SHA-256 of its content, computed while it was written
 * @param fetchedAtMs when it was written, epoch milliseconds
 */
public record CacheEntry(String key, String uri, String nodeId, String path, long bytes, String sha256,
                         long fetchedAtMs) {

  public CacheEntry {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(uri, "uri");
    Objects.requireNonNull(nodeId, "nodeId");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(sha256, "sha256");
  }
}
