package io.kiln.runtime.impl;

import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.Lifetime;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/** Explicit JSON/CBOR shapes of option values that cross nodes (no reflection over sealed types). */
final class OptionsJson {

  private OptionsJson() {
  }

  static Map<String, Object> strategy(SchedulingStrategy s) {
    Map<String, Object> m = new LinkedHashMap<>();
    if (s instanceof SchedulingStrategy.NodeAffinity a) {
      m.put("type", "NODE_AFFINITY");
      m.put("node", a.nodeId());
      m.put("soft", a.soft());
    } else if (s instanceof SchedulingStrategy.InPlacementGroup g) {
      m.put("type", "PLACEMENT_GROUP");
      m.put("group", g.groupId());
      m.put("bundle", g.bundleIndex());
    } else if (s instanceof SchedulingStrategy.Spread) {
      m.put("type", "SPREAD");
    } else {
      m.put("type", "DEFAULT");
    }
    return m;
  }

  static SchedulingStrategy strategy(Map<String, Object> m) {
    return switch (String.valueOf(m.get("type"))) {
      case "NODE_AFFINITY" -> SchedulingStrategy.nodeAffinity((String) m.get("node"), Boolean.TRUE.equals(m.get("soft")));
      case "SPREAD" -> SchedulingStrategy.SPREAD;
      case "PLACEMENT_GROUP" -> new SchedulingStrategy.InPlacementGroup((String) m.get("group"),
          ((Number) m.get("bundle")).intValue());
      default -> SchedulingStrategy.DEFAULT;
    };
  }

  static Map<String, Object> actorOptions(ActorOptions o) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", o.name());
    m.put("namespace", o.namespace());
    m.put("lifetime", o.lifetime().name());
    m.put("getIfExists", o.getIfExists());
    m.put("resources", o.resources().units());
    m.put("strategy", strategy(o.strategy()));
    m.put("maxConcurrency", o.maxConcurrency());
    m.put("maxRestarts", o.maxRestarts());
    m.put("maxTaskRetries", o.maxTaskRetries());
    m.put("mode", o.mode().name());
    m.put("maxPendingCalls", o.maxPendingCalls());
    m.put("placementTimeoutMs", o.placementTimeout().toMillis());
    return m;
  }

  @SuppressWarnings("unchecked")
  static ActorOptions actorOptions(Map<String, Object> m) {
    return ActorOptions.builder()
        .name((String) m.get("name"))
        .namespace((String) m.get("namespace"))
        .lifetime(Lifetime.valueOf((String) m.get("lifetime")))
        .getIfExists(Boolean.TRUE.equals(m.get("getIfExists")))
        .resources(resources((Map<String, Object>) m.get("resources")))
        .strategy(strategy((Map<String, Object>) m.get("strategy")))
        .maxConcurrency(((Number) m.get("maxConcurrency")).intValue())
        .maxRestarts(((Number) m.get("maxRestarts")).intValue())
        .maxTaskRetries(((Number) m.get("maxTaskRetries")).intValue())
        .mode(ExecutionMode.valueOf((String) m.get("mode")))
        .maxPendingCalls(((Number) m.get("maxPendingCalls")).intValue())
        .placementTimeout(Duration.ofMillis(((Number) m.get("placementTimeoutMs")).longValue()))
        .build();
  }

  static Resources resources(Map<String, Object> units) {
    Map<String, Long> u = new LinkedHashMap<>();
    if (units != null) {
      units.forEach((k, v) -> u.put(k, ((Number) v).longValue()));
    }
    return Resources.ofUnits(u);
  }
}
