package io.kiln.gateway.impl;

import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Chooses the pool for one request; a pure function of the pools' reported load, the request's locality
 * hint and the injected random source.
 *
 * <ol>
 *   <li>A locality hint pins the request to that node, hard: if the node has no ready pool the request fails
 *       (503) rather than running elsewhere.</li>
 *   <li>Otherwise, for a text request, the node its prompt's prefix went to ({@link Reason#PREFIX}, see
 *       {@link #route(String, List, String, String, long[])}); a prefix no node holds yet goes to the least loaded
 *       ready pool with room (the local one on a tie).</li>
 *   <li>Otherwise the local node's pool, if it is ready and has room.</li>
 *   <li>Otherwise power-of-two-choices by {@code queueDepth + inFlight} over the ready pools with room: a
 *       {@link Reason#SPILL} when the local pool was full, {@link Reason#BALANCED} when there was none.</li>
 * </ol>
 * Pools whose node is {@link PoolEndpoint#leaving() leaving} (draining before it shuts down) still serve, so
 * with no ready pool a request goes to one of them (the local one first, if it has room) rather than fail; a
 * hint naming a leaving node is served there. No ready or leaving pool fails with 503; ready pools that are all full fail with a capacity error (503 +
 * Retry-After) instead of queueing work that would be refused anyway.
 *
 * <p>Not thread-safe if the random source is not; give each event loop its own router or a thread-safe source.
 */
public final class Router {

  /** Why a pool was chosen. */
  public enum Reason { PINNED, LOCAL, SPILL, BALANCED, HOLDER, PREFIX }

  /** Prompt-prefix keys remembered per gateway (a key per 64 bytes of a prompt's first 4 KiB). */
  static final int PREFIX_CAPACITY = 65_536;
  /** A prefix's node may be this much busier than the least loaded pool (plus a quarter) and keep its prompts. */
  static final int PREFIX_LOAD_SLACK = 4;

  /** The chosen pool and why. */
  public record Route(PoolEndpoint target, Reason reason) {
  }

  private final RandomGenerator random;
  private final Duration retryAfter;
  private final io.kiln.pools.PrefixAffinity prefixes =
      new io.kiln.pools.PrefixAffinity(PREFIX_CAPACITY, PREFIX_LOAD_SLACK);

  public Router(RandomGenerator random, Duration retryAfter) {
    this.random = Objects.requireNonNull(random, "random");
    this.retryAfter = Objects.requireNonNull(retryAfter, "retryAfter");
  }

  /**
   * @param model names the model in error messages
   * @param pools the model version's pools, one per node
   * @param pinnedNode the node a locality hint names, or {@code null}
   * @throws InferenceException kind UNAVAILABLE (possibly a {@link CapacityExceededException}) when no pool can
   *     take the request
   */
  public Route route(String model, List<PoolEndpoint> pools, String pinnedNode) {
    return route(model, pools, pinnedNode, null);
  }

  /**
   * {@link #route(String, List, String)} for a request of a multiplexed deployment naming {@code repositoryModel}
   * (null for none): unless pinned, a ready pool with room that reports the model loaded wins ({@link Reason#HOLDER}:
   * the local one, else the less loaded of two such), so the request skips a load; without one it is routed as any.
   */
  public Route route(String model, List<PoolEndpoint> pools, String pinnedNode, String repositoryModel) {
    return route(model, pools, pinnedNode, repositoryModel, NO_KEYS);
  }

  private static final long[] NO_KEYS = new long[0];

  /**
   * {@link #route(String, List, String, String)} for a text request of prompt-prefix {@code prefixKeys}
   * ({@link io.kiln.pools.PrefixAffinity#keys}; empty for none): unless pinned or held, the node its longest known
   * prefix (or its session) went to takes it ({@link Reason#PREFIX}: that node's workers hold the prefix's KV cache)
   * while that pool is ready, has room and is not clearly busier than the least loaded one; wherever it goes, its
   * prefixes are remembered there.
   */
  public Route route(String model, List<PoolEndpoint> pools, String pinnedNode, String repositoryModel,
                     long[] prefixKeys) {
    if (prefixKeys.length == 0) {
      return place(model, pools, pinnedNode, repositoryModel);
    }
    Route route = null;
    if (pinnedNode == null && repositoryModel == null) {
      PoolEndpoint holder = prefixes.choose(prefixKeys, pools, PoolEndpoint::nodeId,
          p -> p.ready() && p.hasRoom() ? (int) Math.min(Integer.MAX_VALUE, p.load()) : -1);
      route = holder == null ? null : new Route(holder, Reason.PREFIX);
    }
    if (route == null && pinnedNode == null && repositoryModel == null) {
      route = spread(pools);
    }
    if (route == null) {
      route = place(model, pools, pinnedNode, repositoryModel);
    }
    prefixes.record(prefixKeys, route.target().nodeId());
    return route;
  }

  /**
   * A prompt whose prefix no node holds goes to the least loaded ready pool with room (the local one on a tie), not
   * the local one first: its later prompts follow it there ({@link Reason#PREFIX}), so new prefixes spread the KV
   * caches and the work over the nodes by load instead of piling onto the node whose gateway a client uses (measured:
   * with local-first, one gateway's clients kept a 2-node deployment on one node). Null when no ready pool has room
   * ({@link #place} then says why, or serves from a leaving node).
   */
  private Route spread(List<PoolEndpoint> pools) {
    List<PoolEndpoint> least = new ArrayList<>(2);
    long min = Long.MAX_VALUE;
    for (PoolEndpoint p : pools) {
      if (!p.ready() || !p.hasRoom()) {
        continue;
      }
      long load = p.load();
      if (load < min) {
        min = load;
        least.clear();
      }
      if (load == min) {
        least.add(p);
      }
    }
    if (least.isEmpty()) {
      return null;
    }
    for (PoolEndpoint p : least) {
      if (p.local()) {
        return new Route(p, Reason.LOCAL);
      }
    }
    return new Route(least.size() == 1 ? least.get(0) : least.get(random.nextInt(least.size())), Reason.BALANCED);
  }

  private Route place(String model, List<PoolEndpoint> pools, String pinnedNode, String repositoryModel) {
    if (pinnedNode != null) {
      return pinned(model, pools, pinnedNode);
    }
    if (repositoryModel != null) {
      List<PoolEndpoint> holders = new ArrayList<>(2);
      for (PoolEndpoint p : pools) {
        if (p.ready() && p.hasRoom() && p.holds(repositoryModel)) {
          if (p.local()) {
            return new Route(p, Reason.HOLDER);
          }
          holders.add(p);
        }
      }
      if (!holders.isEmpty()) {
        return new Route(twoChoices(holders), Reason.HOLDER);
      }
    }
    PoolEndpoint local = null;
    List<PoolEndpoint> withRoom = new ArrayList<>(pools.size());
    List<PoolEndpoint> leaving = new ArrayList<>(0);
    int ready = 0;
    for (PoolEndpoint p : pools) {
      if (!p.ready()) {
        if (p.leaving()) {
          leaving.add(p);
        }
        continue;
      }
      ready++;
      if (p.local()) {
        local = p;
      }
      if (p.hasRoom()) {
        withRoom.add(p);
      }
    }
    if (local != null && local.hasRoom()) {
      return new Route(local, Reason.LOCAL);
    }
    if (ready == 0 && !leaving.isEmpty()) {
      return lastResort(model, leaving);
    }
    if (ready == 0) {
      throw InferenceException.unavailable("no ready pool for model '" + model + "'");
    }
    if (withRoom.isEmpty()) {
      throw new CapacityExceededException("all " + ready + " ready pool(s) of model '" + model + "' are at capacity",
          retryAfter);
    }
    return new Route(twoChoices(withRoom), local != null ? Reason.SPILL : Reason.BALANCED);
  }

  /** Only pools of leaving nodes are left: they still serve, so one of them takes the request. */
  private Route lastResort(String model, List<PoolEndpoint> leaving) {
    List<PoolEndpoint> withRoom = new ArrayList<>(leaving.size());
    for (PoolEndpoint p : leaving) {
      if (p.hasRoom()) {
        if (p.local()) {
          return new Route(p, Reason.LOCAL);
        }
        withRoom.add(p);
      }
    }
    if (withRoom.isEmpty()) {
      throw new CapacityExceededException("all " + leaving.size() + " pool(s) of model '" + model + "' are at capacity",
          retryAfter);
    }
    return new Route(twoChoices(withRoom), Reason.BALANCED);
  }

  private Route pinned(String model, List<PoolEndpoint> pools, String node) {
    for (PoolEndpoint p : pools) {
      if (p.nodeId().equals(node) && (p.ready() || p.leaving())) {
        if (!p.hasRoom()) {
          throw new CapacityExceededException("the pool of model '" + model + "' on node '" + node + "' is at capacity",
              retryAfter);
        }
        return new Route(p, Reason.PINNED);
      }
    }
    throw InferenceException.unavailable("no ready pool for model '" + model + "' on node '" + node + "'");
  }

  private PoolEndpoint twoChoices(List<PoolEndpoint> candidates) {
    int n = candidates.size();
    if (n == 1) {
      return candidates.get(0);
    }
    int i = random.nextInt(n);
    int j = random.nextInt(n - 1);
    if (j >= i) {
      j++;
    }
    PoolEndpoint a = candidates.get(i);
    PoolEndpoint b = candidates.get(j);
    return b.load() < a.load() ? b : a;
  }
}
