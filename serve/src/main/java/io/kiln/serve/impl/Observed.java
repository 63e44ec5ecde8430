package io.kiln.serve.impl;

import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What one reconcile pass saw, taken once at its start: the pool managers in the named-actor registry, the
 * pools' latest load reports, and the cluster view. Immutable.
 *
 * @param managers live pool managers of deployments (PENDING ones included; those registered on a node that
 *     left are not: they died with it, whatever the registry still says until the leader repairs it; nor
 *     node-local pools, see {@link PoolNames#isNodeLocal})
 * @param loads load reports by manager name
 * @param draining alive nodes draining to leave: no pool is planned onto them, theirs are left to them
 */
record Observed(List<Manager> managers, Map<String, PoolLoad> loads, ClusterView view, Set<String> draining) {

  /** A pool manager found in the registry. */
  record Manager(String deployment, String version, String node, String actorId, ActorState state) {
    String key() {
      return PoolNames.poolManager(deployment, version, node);
    }
  }

  static Observed of(List<ActorInfo> actors, List<PoolLoad> reports, ClusterView view, Set<String> draining) {
    Set<String> alive = view.aliveNodes().stream().map(NodeView::nodeId).collect(Collectors.toSet());
    List<Manager> managers = new ArrayList<>();
    for (ActorInfo a : actors) {
      if (!PoolManager.NAMESPACE.equals(a.namespace()) || a.name() == null || a.state() == ActorState.DEAD
          || (a.nodeId() != null && !alive.contains(a.nodeId()))) {
        continue;
      }
      // A node-local pool (a node's start-up warm-up) is no deployment's: the controller leaves it alone.
      PoolNames.parse(a.name()).filter(p -> p.isManager() && !p.isNodeLocal()).ifPresent(p ->
          managers.add(new Manager(p.name(), p.version(), p.nodeId(), a.actorId(), a.state())));
    }
    Map<String, PoolLoad> loads = new HashMap<>();
    for (PoolLoad l : reports) {
      loads.put(PoolNames.poolManager(l.deployment(), l.version(), l.nodeId()), l);
    }
    return new Observed(List.copyOf(managers), Map.copyOf(loads), view, Set.copyOf(draining));
  }

  /** The cluster view to plan on: without the draining nodes. */
  ClusterView planView() {
    if (draining.isEmpty()) {
      return view;
    }
    return new ClusterView(view.localNodeId(), view.nodes().stream().filter(n -> !draining.contains(n.nodeId()))
        .toList());
  }

  boolean draining(String node) {
    return draining.contains(node);
  }

  /** The managers of one deployment, any version. */
  List<Manager> of(String deployment) {
    return managers.stream().filter(m -> m.deployment().equals(deployment)).toList();
  }

  Optional<Manager> manager(String key) {
    return managers.stream().filter(m -> m.key().equals(key)).findFirst();
  }

  Optional<PoolLoad> load(String key) {
    return Optional.ofNullable(loads.get(key));
  }

  /**
   * Whether some pool of {@code deployment@version} serves: ready and not retired (a retired pool reports not
   * ready), including a pool whose node is {@link PoolLoad#leaving() leaving}: it serves until its node goes.
   */
  boolean ready(String deployment, String version) {
    return loads.values().stream().anyMatch(l -> l.deployment().equals(deployment) && l.version().equals(version)
        && l.ready());
  }

  /** Whether {@code node}'s unreserved resources hold one more worker of {@code each}. */
  boolean fits(String node, Resources each) {
    return view.node(node).map(n -> each.fitsIn(n.available())).orElse(false);
  }

  static int live(PoolLoad l) {
    return l.idleWorkers() + l.busyWorkers();
  }
}
