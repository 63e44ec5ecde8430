package io.kiln.gateway.impl;

import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.InferenceException;
import io.kiln.pools.SequenceSpec;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a sequence's requests go (docs/sequences.md): a request carrying {@code sequence_id} is pinned to one node,
 * the one with the highest rendezvous hash of (sequence id, node id) among the nodes whose pool of the model serves
 * (ready or leaving). Every gateway computes the same node from the same pools, so a sequence's requests may reach
 * the cluster through any gateway. A gateway also remembers the node each recent sequence went to (bounded, least
 * recently used out): its requests keep going there while the node's pool serves even if another node joins, and once
 * that pool is gone a request of the sequence (other than a start) fails UNAVAILABLE naming the sequence and the node
 * rather than starting over elsewhere from the initial state.
 *
 * <p>Thread-safe (a gateway's event loops share it).
 */
final class SequenceRoutes {

  /** Sequences remembered per gateway. */
  static final int CAPACITY = 65_536;

  private final Map<String, String> recent = new LinkedHashMap<>(256, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
      return size() > CAPACITY;
    }
  };

  /**
   * The node a sequence request must run on, or null when the request names no sequence (routed as any).
   *
   * @param model names the model in messages
   * @throws InferenceException INVALID_INPUT when a sequence parameter is malformed, UNAVAILABLE when the sequence's
   *     node no longer serves the model or none does
   */
  String node(String model, Map<String, Object> parameters, List<PoolEndpoint> pools) {
    String id = SequenceSpec.idOf(parameters);
    if (id == null) {
      return null;
    }
    boolean start = SequenceSpec.flag(parameters, SequenceSpec.SEQUENCE_START);
    boolean end = SequenceSpec.flag(parameters, SequenceSpec.SEQUENCE_END);
    String remembered;
    synchronized (recent) {
      remembered = start ? null : end ? recent.remove(id) : recent.get(id);
    }
    if (remembered != null) {
      if (serves(pools, remembered)) {
        return remembered;
      }
      throw InferenceException.unavailable("sequence '" + id + "' was lost: its node '" + remembered
          + "' no longer serves model '" + model + "'; start a new sequence with " + SequenceSpec.SEQUENCE_START
          + ": true");
    }
    String chosen = rendezvous(id, pools);
    if (chosen == null) {
      throw InferenceException.unavailable("no ready pool for model '" + model + "' to hold sequence '" + id + "'");
    }
    if (!end) {
      synchronized (recent) {
        recent.put(id, chosen);
      }
    }
    return chosen;
  }

  /** Whether a request names a sequence (it is then never re-routed to another node). */
  static boolean names(Map<String, Object> parameters) {
    return parameters.get(SequenceSpec.SEQUENCE_ID) != null;
  }

  private static boolean serves(List<PoolEndpoint> pools, String node) {
    for (PoolEndpoint p : pools) {
      if (p.nodeId().equals(node) && (p.ready() || p.leaving())) {
        return true;
      }
    }
    return false;
  }

  /** The serving node with the highest hash of (id, node): a pure function of the id and the nodes. */
  static String rendezvous(String id, List<PoolEndpoint> pools) {
    long key = fnv(id);
    String best = null;
    long bestScore = 0;
    for (PoolEndpoint p : pools) {
      if (!p.ready() && !p.leaving()) {
        continue;
      }
      long score = mix(key ^ Long.rotateLeft(fnv(p.nodeId()), 17));
      if (best == null || Long.compareUnsigned(score, bestScore) > 0
          || score == bestScore && p.nodeId().compareTo(best) < 0) {
        best = p.nodeId();
        bestScore = score;
      }
    }
    return best;
  }

  private static long fnv(String s) {
    long h = 0xcbf29ce484222325L;
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    return h;
  }

  // MurmurHash3's 64-bit finaliser: every input bit moves every output bit.
  private static long mix(long z) {
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
    return z ^ (z >>> 33);
  }
}
