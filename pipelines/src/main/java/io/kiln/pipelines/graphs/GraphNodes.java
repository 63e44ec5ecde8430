package io.kiln.pipelines.graphs;

import io.kiln.pools.InferenceException;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.serve.GraphSpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Where a graph's requests run: the version each step's deployment serves now (the serve controller's) and the
 * nodes that run a pool of every one of them (the {@link PoolLoadBoard}'s reports, a couple of seconds old at most).
 * All steps of one request run on one node. Non-blocking; thread-safe.
 */
final class GraphNodes {

  private final Function<String, Optional<String>> servingVersion;
  private final PoolLoadBoard board;

  GraphNodes(Function<String, Optional<String>> servingVersion, PoolLoadBoard board) {
    this.servingVersion = servingVersion;
    this.board = board;
  }

  /**
   * The serving version of each deployment the graph calls.
   *
   * @throws InferenceException UNAVAILABLE naming the step whose deployment has no version ready
   */
  Map<String, String> versions(GraphSpec graph) {
    Map<String, String> out = new HashMap<>();
    for (GraphSpec.Step s : graph.steps()) {
      if (!out.containsKey(s.deployment())) {
        String version = servingVersion.apply(s.deployment()).orElseThrow(() -> InferenceException.unavailable(
            "graph '" + graph.name() + "' step '" + s.name() + "': deployment '" + s.deployment()
            + "' has no version ready to serve"));
        out.put(s.deployment(), version);
      }
    }
    return out;
  }

  /** The nodes running a pool of every step's deployment at {@code versions}, in the board's order. */
  List<GraphNode> nodes(GraphSpec graph, Map<String, String> versions) {
    Map<String, GraphNode> nodes = null;
    for (String deployment : graph.deployments()) {
      Map<String, GraphNode> here = new LinkedHashMap<>();
      for (PoolLoad l : board.pools(deployment, versions.get(deployment))) {
        GraphNode pool = new GraphNode(l.nodeId(), l.ready() && !l.draining(), l.leaving(), l.queueDepth(),
            l.inFlight(), l.capacity());
        if (nodes == null) {
          here.put(l.nodeId(), pool);
        } else if (nodes.containsKey(l.nodeId())) {
          here.put(l.nodeId(), combine(nodes.get(l.nodeId()), pool));
        }
      }
      nodes = here;
    }
    return nodes == null ? List.of() : new ArrayList<>(nodes.values());
  }

  private static GraphNode combine(GraphNode a, GraphNode b) {
    boolean ready = a.ready() && b.ready();
    boolean leaving = a.serves() && b.serves() && !ready;
    return new GraphNode(a.nodeId(), ready, leaving, Math.max(a.queueDepth(), b.queueDepth()),
        a.inFlight() + b.inFlight(), Math.min(a.capacity(), b.capacity()));
  }

  /**
   * The node a request runs on: {@code preferred} (the node that received it, or where a router sent it) when it runs
   * every step's pool and they serve, else the least loaded node whose pools are all ready, else one that is leaving.
   *
   * @throws InferenceException UNAVAILABLE when no node runs a serving pool of every step, naming what is missing
   */
  String choose(GraphSpec graph, Map<String, String> versions, String preferred) {
    List<GraphNode> nodes = nodes(graph, versions);
    GraphNode best = null;
    for (GraphNode n : nodes) {
      if (n.nodeId().equals(preferred) && n.serves()) {
        return n.nodeId();
      }
      if (n.serves() && (best == null || (n.ready() && !best.ready())
          || (n.ready() == best.ready() && n.load() < best.load()))) {
        best = n;
      }
    }
    if (best == null) {
      throw InferenceException.unavailable("graph '" + graph.name() + "': " + missing(graph, versions));
    }
    return best.nodeId();
  }

  /** Why no node serves the graph, in a sentence. */
  String missing(GraphSpec graph, Map<String, String> versions) {
    for (GraphSpec.Step s : graph.steps()) {
      String v = versions.get(s.deployment());
      if (board.pools(s.deployment(), v).stream().noneMatch(PoolLoad::ready)) {
        return "no ready pool of deployment '" + s.deployment() + "'@" + v + " (step '" + s.name() + "')";
      }
    }
    return "no node runs a ready pool of every step's deployment (" + String.join(", ", graph.deployments())
        + "); a graph runs all its steps on one node";
  }
}
