package io.kiln.pipelines;

import static io.kiln.runtime.testing.Await.result;
import static io.kiln.pipelines.PipelineCluster.HEAD;
import static io.kiln.pipelines.PipelineCluster.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The acceptance test, on three nodes in one JVM (head with {@code callback_slot: 1}, every node
 * {@code fetch_slot: 2}) with real pools: many concurrent runs of fetch → infer → describe → callback keep
 * their data on the node that fetched it; killing a node mid-run fails hard runs clearly and completes soft
 * ones by re-running; a run whose coordinator dies is failed by the leader.
 */
@Tag("slow")
class PipelineLocalityTest {

  static final String MEDIA = """
      pipelines:
        - name: media
          webhook: "${input.done_url}"
          steps:
            - name: fetch
              fetch: {uri: "${input.media_uri}", max_bytes: 1048576}
              resources: {fetch_slot: 1}
              strategy: spread
            - name: analyse
              infer: {deployment: ident}
            - name: describe
              class: io.kiln.pipelines.examples.DescribeStep
              params: {from: analyse}
            - name: callback
              webhook: "${input.callback_url}"
              strategy: {node_with_resource: callback_slot}
      """;

  /** fetch → hold (pinned to the fetch's node, waits for a gate) → infer → callback. */
  static String holding(String name, String onNodeLoss) {
    return """
          - name: %s
            on_node_loss: %s
            steps:
              - name: fetch
                fetch: "${input.media_uri}"
                resources: {fetch_slot: 1}
                strategy: spread
              - name: hold
                class: io.kiln.pipelines.TestSteps$Hold
                params: {gate: "${input.gate}"}
                strategy: {same_node_as: fetch}
              - name: analyse
                infer: {deployment: ident}
              - name: callback
                webhook: "${input.callback_url}"
                strategy: {node_with_resource: callback_slot}
        """.formatted(name, onNodeLoss);
  }

  @TempDir
  Path tmp;

  @Test
  void concurrentRunsKeepEveryInputOnTheNodeThatFetchedIt() throws Exception {
    try (PipelineCluster c = new PipelineCluster(tmp, HEAD, "w1", "w2")) {
      c.apply(MEDIA);
      List<String> nodes = List.of(HEAD, "w1", "w2");
      int runs = 24;
      Map<String, String> mediaOf = new HashMap<>();
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        String media = "clip-" + i;
        // Runs are accepted (and coordinated) by every node in turn.
        String id = result(c.pipelines(nodes.get(i % 3)).startRun("media", RunRequest.of(Map.of(
            "media_uri", c.url("/media/" + media), "callback_url", c.url("/hook/callback"),
            "done_url", c.url("/hook/done")))));
        mediaOf.put(id, media);
        ids.add(id);
      }
      Map<String, Set<String>> fetchedKeysByNode = new HashMap<>();
      for (String id : ids) {
        RunStatus s = c.awaitEnd("w2", id);
        assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
        StepStatus fetch = s.step("fetch").orElseThrow();
        StepStatus analyse = s.step("analyse").orElseThrow();
        // Locality, per run: the infer step and the pool that served it ran where the input was fetched.
        assertThat(fetch.output().get("node")).isEqualTo(fetch.nodeId());
        assertThat(analyse.nodeId()).isEqualTo(fetch.nodeId());
        assertThat(analyse.output().get("node")).as("the pool's kiln_node").isEqualTo(fetch.nodeId());
        assertThat(analyse.output().get("input_key")).isEqualTo(fetch.output().get("key"));
        // The identity model returned exactly the fetched media.
        Map<?, ?> out = (Map<?, ?>) ((List<?>) analyse.output().get("outputs")).get(0);
        float[] expected = PipelineCluster.expected(mediaOf.get(id), 2);
        List<?> data = (List<?>) out.get("data");
        assertThat(data).hasSize(expected.length);
        for (int k = 0; k < expected.length; k++) {
          assertThat(((Number) data.get(k)).floatValue()).isEqualTo(expected[k]);
        }
        assertThat(s.step("describe").orElseThrow().output().get("summary").toString()).contains("argmax per row");
        assertThat(s.step("callback").orElseThrow().nodeId()).as("the callback runs on the head").isEqualTo(HEAD);
        assertThat(s.steps()).allSatisfy(st -> {
          assertThat(st.startedAtMs()).isPositive();
          assertThat(st.endedAtMs()).isGreaterThanOrEqualTo(st.startedAtMs());
        });
        fetchedKeysByNode.computeIfAbsent(fetch.nodeId(), n -> new HashSet<>()).add((String) fetch.output().get("key"));
      }
      // Per-node fetch concurrency never exceeded the node's fetch_slot count, and did reach it.
      int busiest = 0;
      long fetches = 0;
      for (String n : nodes) {
        StepLoad load = c.pipelines(n).stepLoads().get("fetch");
        assertThat(load).as("SPREAD gave node " + n + " fetches").isNotNull();
        assertThat(load.peak()).as("fetch peak on " + n).isLessThanOrEqualTo(2);
        busiest = Math.max(busiest, load.peak());
        fetches += load.total();
        assertThat(c.pipelines(n).stepLoads().get("callback") != null).isEqualTo(n.equals(HEAD));
      }
      assertThat(busiest).isEqualTo(2);
      assertThat(fetches).isEqualTo(runs);
      assertThat(c.mediaRequests.get()).isEqualTo(runs);
      // No file was copied between nodes: each node's cache holds exactly what it fetched itself.
      Set<String> seen = new HashSet<>();
      for (String n : nodes) {
        Set<String> onDisk = new HashSet<>(c.cachedKeys(n));
        assertThat(onDisk).as("cache of " + n).isEqualTo(fetchedKeysByNode.getOrDefault(n, Set.of()));
        for (String k : onDisk) {
          assertThat(seen.add(k)).as("key " + k + " on more than one node").isTrue();
        }
      }
      // The callback webhook was called once per run, from the head; the completion webhook too.
      await().atMost(WAIT).until(() -> c.completions.size() == runs);
      assertThat(c.callbacks).hasSize(runs).allSatisfy(b -> assertThat(b.getString("node")).isEqualTo(HEAD));
      assertThat(c.completions).allSatisfy(b -> assertThat(b.getString("state")).isEqualTo("SUCCEEDED"));
      // data_key routing: any node's index maps an input (by URI or key) to the node holding it.
      for (String id : ids) {
        RunStatus s = c.status(id);
        String node = s.step("fetch").orElseThrow().nodeId();
        String uri = (String) s.step("fetch").orElseThrow().output().get("uri");
        await().atMost(WAIT).until(() -> c.pipelines("w1").cacheIndex().nodeFor(uri).equals(java.util.Optional.of(node)));
        assertThat(c.pipelines(HEAD).cacheIndex().nodeFor(NodeCache.keyOf(uri))).contains(node);
      }
    }
  }

  /** Starts runs of a holding pipeline from the head and returns them once every hold step is running. */
  static List<String> startHeld(PipelineCluster c, String pipeline, String gate, int runs) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      ids.add(result(c.pipelines(HEAD).startRun(pipeline, RunRequest.of(Map.of("media_uri",
          c.url("/media/" + gate + "-" + i), "gate", gate, "callback_url", c.url("/hook/callback"))))));
    }
    await().atMost(WAIT).until(() -> ids.stream().allMatch(id -> TestSteps.HOLDING.containsKey(id)));
    return ids;
  }

  /** A worker node holding at least one of the runs. */
  static String victim(PipelineCluster c, List<String> ids) {
    return ids.stream().map(id -> c.status(id).step("hold").orElseThrow().nodeId()).filter(n -> !n.equals(HEAD))
        .findFirst().orElseThrow(() -> new AssertionError("SPREAD put no run on a worker"));
  }

  @Test
  void killingTheFetchNodeFailsHardRunsWithAClearError() throws Exception {
    try (PipelineCluster c = new PipelineCluster(tmp, HEAD, "w1", "w2")) {
      c.apply("pipelines:\n" + holding("hard", "fail"));
      List<String> ids = startHeld(c, "hard", "hard-gate", 6);
      String victim = victim(c, ids);
      Map<String, String> fetchNode = new HashMap<>();
      ids.forEach(id -> fetchNode.put(id, c.status(id).step("fetch").orElseThrow().nodeId()));
      c.crash(victim);
      // The loss must be handled while 'hold' still runs: opened earlier, a hold could finish first and the
      // run would fail at 'analyse' instead (seen under load).
      await().atMost(WAIT).until(() -> ids.stream().filter(id -> fetchNode.get(id).equals(victim))
          .allMatch(id -> c.status(id).state() == RunState.FAILED));
      TestSteps.gate("hard-gate").countDown();
      for (String id : ids) {
        RunStatus s = c.awaitEnd(HEAD, id);
        if (fetchNode.get(id).equals(victim)) {
          assertThat(s.state()).isEqualTo(RunState.FAILED);
          assertThat(s.error()).isEqualTo("step 'hold' must run on node " + victim + ", where step 'fetch' ran, but"
              + " node " + victim + " left the cluster (on_node_loss: fail)");
          assertThat(s.step("hold").orElseThrow().state()).isEqualTo(StepState.FAILED);
          assertThat(s.step("analyse").orElseThrow().state()).isEqualTo(StepState.SKIPPED);
          assertThat(s.events()).extracting(PipelineEvent::type).contains("node_lost", "run_failed");
        } else {
          assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
          assertThat(s.step("analyse").orElseThrow().nodeId()).isEqualTo(fetchNode.get(id));
        }
      }
    }
  }

  @Test
  void killingTheFetchNodeReRunsSoftRunsElsewhere() throws Exception {
    try (PipelineCluster c = new PipelineCluster(tmp, HEAD, "w1", "w2")) {
      c.apply("pipelines:\n" + holding("soft", "rerun"));
      List<String> ids = startHeld(c, "soft", "soft-gate", 6);
      String victim = victim(c, ids);
      Map<String, String> fetchNode = new HashMap<>();
      ids.forEach(id -> fetchNode.put(id, c.status(id).step("fetch").orElseThrow().nodeId()));
      c.crash(victim);
      TestSteps.gate("soft-gate").countDown();
      int rerun = 0;
      for (String id : ids) {
        RunStatus s = c.awaitEnd(HEAD, id);
        assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
        String fetchedOn = s.step("fetch").orElseThrow().nodeId();
        assertThat(fetchedOn).isNotEqualTo(victim);
        assertThat(s.step("hold").orElseThrow().nodeId()).isEqualTo(fetchedOn);
        assertThat(s.step("analyse").orElseThrow().nodeId()).isEqualTo(fetchedOn);
        assertThat(s.step("analyse").orElseThrow().output().get("node")).isEqualTo(fetchedOn);
        if (fetchNode.get(id).equals(victim)) {
          rerun++;
          assertThat(s.reruns()).isEqualTo(1);
          assertThat(s.events()).extracting(PipelineEvent::type).containsSubsequence("node_lost", "rerun",
              "run_succeeded");
        } else {
          assertThat(s.reruns()).isZero();
        }
      }
      assertThat(rerun).isPositive();
    }
  }

  @Test
  void aRunWhoseCoordinatorDiesIsFailedByTheLeader() throws Exception {
    try (PipelineCluster c = new PipelineCluster(tmp, HEAD, "w1", "w2")) {
      c.apply("pipelines:\n" + holding("orphan", "rerun"));
      String id = result(c.pipelines("w1").startRun("orphan", RunRequest.of(Map.of("media_uri",
          c.url("/media/orphan"), "gate", "orphan-gate", "callback_url", c.url("/hook/callback")))));
      await().atMost(WAIT).until(() -> TestSteps.HOLDING.containsKey(id));
      assertThat(c.status(id).coordinator()).isEqualTo("w1");
      c.crash("w1");
      RunStatus s = c.awaitEnd(HEAD, id);
      TestSteps.gate("orphan-gate").countDown();
      assertThat(s.state()).isEqualTo(RunState.FAILED);
      assertThat(s.error()).startsWith("node w1, which coordinated the run, left the cluster (step 'hold' was running");
      assertThat(s.steps()).noneMatch(st -> st.state() == StepState.RUNNING || st.state() == StepState.WAITING);
    }
  }
}
