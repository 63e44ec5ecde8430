package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import io.kiln.serve.DeploymentStatus;
import java.time.Duration;
import java.util.List;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Changes an operator makes while traffic flows, each with zero failed requests (not one 503, 504 or error):
 * a version rollout, autoscaling down from 4 workers to 1, and a deployment deleted while its last requests
 * finish. Two real serving nodes (Hazelcast members, gateways, pools, workers) in this JVM; closed-loop clients
 * over HTTP through both gateways; every request counted and its answer checked. (The SIGTERM drain of a node is
 * {@code DrainTest} and {@code DrainIT}.) Figures go to {@code target/reliability/zero-failure-*.json}.
 */
@Tag("slow")
class ZeroFailureChangesTest {

  static final int SLEEP_MS = 5;
  /** Requests answered under load after each change (CI size; {@code reliability/run.sh changes} uses 5000). */
  static final long ANSWERS = Figures.knob("changes.answers", 200);
  static ServingCluster cluster;
  static List<Integer> ports;
  static LoadDriver driver;

  @BeforeAll
  static void start() {
    cluster = ServingCluster.start("za", "zb");
    ports = List.of(cluster.node("za").httpPort(), cluster.node("zb").httpPort());
    driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String sleepy(String name, String version, String pool, String extra) {
    return """
        deployments:
          - name: %s
            version: "%s"
            model:
              uri: builtin:sleep
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
            pool: %s
            batching: {max_batch_size: 4, max_batch_delay_ms: 1}
            queue: {max_queued: 10000, timeout_ms: 60000}
        %s""".formatted(name, version, pool, extra);
  }

  private static IntFunction<LoadDriver.Request> rows(String model, int sleepMs) {
    return i -> LoadDriver.row(model, sleepMs, -i);
  }

  private static void assertNoneFailed(String scenario, LoadDriver.Outcome o, Object... figures) {
    Figures f = new Figures("zero-failure-" + scenario).put("load", o.figures());
    for (int i = 0; i + 1 < figures.length; i += 2) {
      f.put((String) figures[i], figures[i + 1]);
    }
    f.write();
    assertThat(o.lost()).as("lost: %s", o.lostReasons()).isZero();
    assertThat(o.clean()).as("failed (cleanly, but failed): %s", o.byStatus()).isZero();
    assertThat(o.ok()).isEqualTo(o.sent()).isPositive();
  }

  private static void awaitAnswered(LoadDriver.Running load, long more) {
    long target = load.sofar().ok() + more;
    await().atMost(ServingCluster.WAIT).until(() -> load.sofar().ok() >= target || load.sofar().lost() > 0);
  }

  @Test
  void aVersionRolloutUnderLoadFailsNoRequest() {
    String pool = "{workers_per_node: 2, worker_resources: {CPU: 0.5}}";
    cluster.deploy(sleepy("roll", "1", pool, ""));
    cluster.awaitReady("roll", 2);
    LoadDriver.Running load = driver.start(ports, 6, rows("roll", SLEEP_MS));
    awaitAnswered(load, ANSWERS);
    long before = load.sofar().ok();

    cluster.deploy(sleepy("roll", "2", pool, ""));
    await().atMost(ServingCluster.WAIT).until(() -> {
      DeploymentStatus s = cluster.node("za").serve().statuses().get("roll");
      return s != null && "2".equals(s.servingVersion()) && s.phase() == DeploymentStatus.Phase.READY
          && s.pools().stream().allMatch(p -> p.version().equals("2") && p.ready()) && s.pools().size() == 2;
    });
    awaitAnswered(load, ANSWERS);
    LoadDriver.Outcome o = load.stop();
    assertNoneFailed("rollout", o, "answeredBeforeTheRollout", before);
    cluster.node("za").serve().delete("roll");
  }

  @Test
  void autoscalingDownFromFourWorkersToOneUnderLoadFailsNoRequest() {
    String pool = "{workers_per_node: 4, worker_resources: {CPU: 0.5}}";
    String auto = """
            autoscaling: {min_workers: 1, max_workers: 4, target_ongoing_per_worker: 1, upscale_delay_ms: 0,
                          downscale_delay_ms: 500}
        """;
    cluster.deploy(sleepy("shrink", "1", pool, auto));
    cluster.awaitReady("shrink", 2);
    // Eight clients of a 20 ms model keep ~4 requests outstanding per node: four workers each.
    LoadDriver.Running load = driver.start(ports, 8, rows("shrink", 20));
    await().atMost(ServingCluster.WAIT).until(() -> workers("shrink", "za") == 4 && workers("shrink", "zb") == 4);
    awaitAnswered(load, 100);
    LoadDriver.Outcome busy = load.stop();
    assertNoneFailed("scale-up", busy);

    // One client: one outstanding request per cluster, so each node shrinks to one worker while it flows.
    LoadDriver.Running light = driver.start(ports, 1, rows("shrink", 20));
    await().atMost(ServingCluster.WAIT).until(() -> workers("shrink", "za") == 1 && workers("shrink", "zb") == 1);
    awaitAnswered(light, ANSWERS / 4);
    LoadDriver.Outcome o = light.stop();
    assertNoneFailed("scale-down", o, "workersAfter", List.of(workers("shrink", "za"), workers("shrink", "zb")));
    cluster.node("za").serve().delete("shrink");
  }

  @Test
  void aDeploymentDeletedWhileItsLastRequestsFinishFailsNoneOfThem() {
    String pool = "{workers_per_node: 1, worker_resources: {CPU: 0.5}}";
    cluster.deploy(sleepy("gone", "1", pool, ""));
    cluster.awaitReady("gone", 2);
    // A 200 ms model, batches of 4, 16 clients: requests are executing and queued when the delete comes.
    LoadDriver.Running load = driver.start(ports, 16, rows("gone", 200));
    awaitAnswered(load, 40);
    load.stopSending();
    // Every request in flight has reached a gateway (none is still on the wire), so none arrives after the delete.
    long[] inFlight = {0};
    await().atMost(ServingCluster.WAIT).until(() -> {
      inFlight[0] = load.sofar().inFlight();
      return inFlightAtGateways() == inFlight[0];
    });
    assertThat(ServingCluster.join(cluster.node("za").serve().delete("gone"))).isTrue();
    LoadDriver.Outcome o = load.stop();
    assertNoneFailed("delete", o, "inFlightWhenDeleted", inFlight[0]);
    assertThat(inFlight[0]).as("requests were still in flight when the delete came").isPositive();
    await().atMost(ServingCluster.WAIT).until(() -> !cluster.node("zb").serve().statuses().containsKey("gone"));
  }

  private static long inFlightAtGateways() {
    return cluster.nodeIds().stream().mapToLong(id -> cluster.node(id).gateway().requestsInFlight()).sum();
  }

  private static int workers(String deployment, String node) {
    DeploymentStatus s = cluster.node("za").serve().statuses().get(deployment);
    if (s == null) {
      return -1;
    }
    return cluster.stats(deployment, s.servingVersion(), node).totalWorkers();
  }
}
