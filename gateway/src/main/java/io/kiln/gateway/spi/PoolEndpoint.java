package io.kiln.gateway.spi;

import java.util.List;
import java.util.Objects;

/**
 * One node's pool for a model version, with its load as last reported. Load figures may be a little
 * stale; the pool itself is authoritative and may still refuse with a capacity error.
 *
 * @param nodeId the node the pool runs on
 * @param local whether that node is the one this gateway runs on
 * @param ready whether the pool has at least one warm worker and takes new work
 * @param queueDepth requests waiting in the pool's queue
 * @param inFlight requests being executed by its workers
 * @param capacity the most requests its queue holds; the pool has room while {@code queueDepth < capacity}
 * @param leaving whether the pool's node is draining to leave (then {@code ready} is false): it still serves, but
 *     gets work only when no ready pool can take it
 * @param models the models a multiplexed pool reported loaded (bounded; empty for a pool of one model)
 */
public record PoolEndpoint(String nodeId, boolean local, boolean ready, int queueDepth, int inFlight, int capacity,
                           boolean leaving, List<String> models) {

  /** A pool of one model (or one that reports no loaded models). */
  public PoolEndpoint(String nodeId, boolean local, boolean ready, int queueDepth, int inFlight, int capacity,
                      boolean leaving) {
    this(nodeId, local, ready, queueDepth, inFlight, capacity, leaving, List.of());
  }

  /** Whether a multiplexed pool reported {@code model} loaded. */
  public boolean holds(String model) {
    return models.contains(model);
  }

  public PoolEndpoint {
    Objects.requireNonNull(nodeId, "nodeId");
    models = models == null ? List.of() : List.copyOf(models);
    if (queueDepth < 0 || inFlight < 0 || capacity < 0) {
      throw new IllegalArgumentException("pool on node '" + nodeId + "': load figures must be >= 0, got queueDepth="
          + queueDepth + " inFlight=" + inFlight + " capacity=" + capacity);
    }
  }

  /** A pool whose node is not leaving. */
  public PoolEndpoint(String nodeId, boolean local, boolean ready, int queueDepth, int inFlight, int capacity) {
    this(nodeId, local, ready, queueDepth, inFlight, capacity, false);
  }

  /** Whether the queue has room for another request. */
  public boolean hasRoom() {
    return queueDepth < capacity;
  }

  /** The load figure power-of-two-choices compares. */
  public long load() {
    return (long) queueDepth + inFlight;
  }
}
