package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.InferenceException;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.SharedStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.kiln.testkit.RunStamp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Leader loss mid-deploy, measured: the leader (whose own node hosts no pool) is killed at the moment the
 * deployment's first pool actor of a given kind is claimed in the registry, so it has started creating pools
 * and not finished. The next leader must converge on the same desired state with nothing deployed twice:
 * one manager per selected node, exactly {@code workers_per_node} workers each, and every worker's model
 * loaded exactly once (no duplicate worker ever started). Figures: time to a new leader and to READY.
 */
@Tag("slow")
class LeaderLossMidDeployTest {

  static final int WORKERS = 2;
  /** Requests sent once the deployment is READY under the new leader. */
  static final int REQUESTS_AFTER = 12;
  static final List<String> SERVING = List.of("node-b", "node-c", "node-d");

  @Test
  void theNextLeaderConvergesAndNothingIsDeployedTwice() throws Exception {
    List<Map<String, Object>> runs = new ArrayList<>();
    for (String killAt : List.of("manager", "worker")) {
      runs.add(killLeaderAtFirst(killAt));
    }
    String json = "{\"scenario\":\"leader-loss\",\"nodes\":4,\"runs\":" + runs.stream().map(LeaderLossMidDeployTest::json)
        .toList() + "," + RunStamp.jsonMembers() + "}";
    Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    Files.createDirectories(out);
    Files.writeString(out.resolve("leader-loss.json"), json);
    System.out.println("RELIABILITY leader-loss " + json);
  }

  private Map<String, Object> killLeaderAtFirst(String kind) {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", ServeNodes.NODE, Map.of());
      Map<String, SimpleMeterRegistry> meters = new LinkedHashMap<>();
      for (String id : SERVING) {
        ServeNodes.Node n = nodes.start(id, ServeNodes.NODE, Map.of("serve", "yes"));
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        n.runtime().registerLocalService(MeterRegistry.class, r);
        meters.put(id, r);
      }
      assertThat(nodes.leader().id()).isEqualTo("node-a");
      AtomicBoolean crashed = new AtomicBoolean();
      AtomicLong crashedAt = new AtomicLong();
      SharedStore<JsonNode> registry = nodes.node("node-b").runtime().store("kiln.actors", JsonNode.class);
      String prefix = PoolManager.NAMESPACE + "/" + PoolNames.prefix("echo", "1");
      String listener = registry.addListener((key, entry) -> {
        boolean isWorker = key.contains("/worker-");
        if (key.startsWith(prefix) && entry != null && isWorker == kind.equals("worker")
            && crashed.compareAndSet(false, true)) {
          crashedAt.set(System.nanoTime());
          nodes.crash("node-a");
        }
      });
      try {
        nodes.apply(ServeNodes.identity("echo", "1", """
            pool:
              workers_per_node: %d
              node_selector: {serve: "yes"}
            """.formatted(WORKERS)));
        await().atMost(ServeNodes.WAIT).untilTrue(crashed);
      } finally {
        registry.removeListener(listener);
      }
      await().atMost(ServeNodes.WAIT).pollInterval(java.time.Duration.ofMillis(10))
          .until(() -> nodes.leader().id().equals("node-b"));
      long newLeaderMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - crashedAt.get());
      nodes.awaitReady("echo", "1");
      long readyMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - crashedAt.get());

      assertThat(nodes.hostedManagers("echo")).isEqualTo(Map.of(
          "node-b", List.of(PoolNames.poolManager("echo", "1", "node-b")),
          "node-c", List.of(PoolNames.poolManager("echo", "1", "node-c")),
          "node-d", List.of(PoolNames.poolManager("echo", "1", "node-d"))));
      List<ActorInfo> actors = nodes.poolActors("echo");
      assertThat(actors).hasSize(SERVING.size() * (1 + WORKERS));
      assertThat(actors.stream().map(ActorInfo::name).distinct().count()).isEqualTo(actors.size());
      // Every worker loaded its model once: none was started twice, by either leader.
      Map<String, Double> loads = new LinkedHashMap<>();
      meters.forEach((id, r) -> loads.put(id, r.find("kiln.pool.worker.loads").counters().stream()
          .mapToDouble(Counter::count).sum()));
      assertThat(loads).containsExactlyInAnyOrderEntriesOf(Map.of("node-b", (double) WORKERS,
          "node-c", (double) WORKERS, "node-d", (double) WORKERS));
      // Requests after READY, each counted: answered with its own values, failed cleanly (503/504), or lost.
      long sent = 0;
      long succeeded = 0;
      long failedCleanly = 0;
      List<String> lost = new ArrayList<>();
      for (int i = 0; i < REQUESTS_AFTER; i++) {
        sent++;
        try {
          if (ServeNodes.echoes(nodes.infer("echo", ServeNodes.row(i)), i)) {
            succeeded++;
          } else {
            lost.add("#" + i + ": a wrong answer");
          }
        } catch (Throwable t) {
          InferenceException e = inferenceException(t);
          if (e != null && (e.kind() == InferenceException.Kind.UNAVAILABLE
              || e.kind() == InferenceException.Kind.DEADLINE_EXCEEDED)) {
            failedCleanly++;
          } else {
            lost.add("#" + i + ": " + t);
          }
        }
      }
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("killedAtFirst", kind);
      f.put("newLeaderMs", newLeaderMs);
      f.put("readyMs", readyMs);
      f.put("managers", SERVING.size());
      f.put("workers", actors.size() - SERVING.size());
      f.put("modelLoads", loads.values().stream().mapToDouble(Double::doubleValue).sum());
      f.put("sent", sent);
      f.put("succeeded", succeeded);
      f.put("failedCleanly", failedCleanly);
      f.put("lost", lost.size());
      if (!lost.isEmpty()) {
        f.put("lostExamples", String.join("; ", lost).replace("\"", "'").replace("\\", "/"));
      }
      assertThat(lost).as("requests lost after the new leader's deploy").isEmpty();
      assertThat(succeeded).as("every request after READY answered").isEqualTo(sent);
      return f;
    }
  }

  private static InferenceException inferenceException(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof InferenceException e) {
        return e;
      }
    }
    return null;
  }

  private static String json(Map<String, Object> m) {
    StringBuilder b = new StringBuilder("{");
    m.forEach((k, v) -> b.append(b.length() > 1 ? "," : "").append('"').append(k).append("\":")
        .append(v instanceof String s ? "\"" + s + "\"" : v));
    return b.append('}').toString();
  }
}
