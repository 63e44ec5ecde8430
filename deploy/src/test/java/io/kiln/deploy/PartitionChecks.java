package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What {@link PartitionIT} reads in the nodes' {@code /api/v1/status}: live nodes, the {@code echo} deployment's
 * pools, and who holds each named actor (the registry's {@code actors} against each node's own {@code localActors}).
 * Each check answers null when it holds, else what is wrong, for the timeout's message.
 */
final class PartitionChecks {

  private PartitionChecks() {
  }

  /** The actor id of echo's pool manager for {@code node} in the registry {@code status} lists, or "none". */
  static String managerOf(JsonNode status, String node) {
    for (JsonNode a : status.path("actors")) {
      if (a.path("name").asText().endsWith("/echo@1/" + node)) {
        return a.path("actorId").asText();
      }
    }
    return "none";
  }

  /** Null when {@code s} (node {@code n}'s status) shows every node alive and echo READY, one ready pool per node. */
  static String converged(JsonNode s, String n, List<String> nodes) {
    if (!nodes.stream().allMatch(m -> alive(s, m))) {
      return n + " sees nodes " + s.path("nodes");
    }
    JsonNode d = deployment(s);
    // Ready pools per node, a pool not ready counting 100: exactly {each node: 1} when converged.
    Map<String, Integer> pools = new LinkedHashMap<>();
    d.path("pools").forEach(p -> pools.merge(p.path("node").asText(), p.path("ready").asBoolean() ? 1 : 100,
        Integer::sum));
    Map<String, Integer> onePerNode = new LinkedHashMap<>();
    nodes.forEach(m -> onePerNode.put(m, 1));
    if (!d.path("phase").asText().equals("READY") || !pools.equals(onePerNode)) {
      return n + " sees echo " + d.path("phase") + " with pools " + d.path("pools");
    }
    return null;
  }

  /**
   * Null when every named actor of the registry (as {@code gateway} reads it) is held by exactly one live actor of the nodes' own
   * tables, on the node and with the id the registry says, and no node holds a name the registry does not; else what
   * is wrong.
   */
  static String ownership(Map<String, JsonNode> statuses, String gateway, List<String> nodes) {
    Function<JsonNode, String> name = a -> a.path("namespace").asText() + "/" + a.path("name").asText();
    Map<String, JsonNode> registry = new LinkedHashMap<>();
    for (JsonNode a : statuses.get(gateway).path("actors")) {
      if (registry.put(name.apply(a), a) != null) {
        return "the registry lists " + name.apply(a) + " twice";
      }
    }
    Map<String, List<String>> holders = new LinkedHashMap<>();
    statuses.forEach((n, s) -> s.path("localActors").forEach(a -> holders.computeIfAbsent(name.apply(a),
        k -> new ArrayList<>()).add(n + ":" + a.path("actorId").asText() + ":" + a.path("state").asText())));
    for (String n : nodes) {
      if (registry.keySet().stream().noneMatch(k -> k.endsWith("/echo@1/" + n))) {
        return "no pool manager of echo for " + n + " in the registry: " + registry.keySet();
      }
    }
    for (var e : registry.entrySet()) {
      JsonNode a = e.getValue();
      String want = a.path("nodeId").asText() + ":" + a.path("actorId").asText() + ":ALIVE";
      List<String> held = holders.getOrDefault(e.getKey(), List.of());
      if (!a.path("state").asText().equals("ALIVE") || !held.equals(List.of(want))) {
        return e.getKey() + " is " + a.path("state").asText() + " " + want + " in the registry, held by " + held;
      }
    }
    for (var e : holders.entrySet()) {
      if (!registry.containsKey(e.getKey())) {
        return e.getKey() + " is held by " + e.getValue() + " but not in the registry";
      }
    }
    return null;
  }

  static boolean alive(JsonNode status, String node) {
    for (JsonNode n : status.path("nodes")) {
      if (n.path("id").asText().equals(node)) {
        return n.path("alive").asBoolean();
      }
    }
    return false;
  }

  static JsonNode deployment(JsonNode status) {
    for (JsonNode d : status.path("deployments")) {
      if (d.path("name").asText().equals("echo")) {
        return d;
      }
    }
    return ClosedLoopLoad.JSON.createObjectNode();
  }

  static boolean poolReady(JsonNode status, String node) {
    for (JsonNode p : deployment(status).path("pools")) {
      if (p.path("node").asText().equals(node)) {
        return p.path("ready").asBoolean();
      }
    }
    return false;
  }

}
