package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.ServingNode;
import io.kiln.gateway.support.Figures;
import io.kiln.pools.PoolStats;
import io.kiln.testkit.OipRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Clients that vanish while their request waits in a real pool's queue (a {@code builtin:sleep} pool of one
 * worker, each batch 200 ms): their requests are withdrawn, so afterwards no queue slot, in-flight request or
 * busy worker is left, the gateway counts nothing in flight, the heap is where it was, and the next client is
 * served at once.
 */
@Tag("slow")
class VanishingClientsTest {

  static final int CLIENTS = (int) Figures.knob("vanish.clients", 40);
  static final String YAML = """
      deployments:
        - name: slow
          version: "1"
          model:
            uri: builtin:sleep
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
          queue: {max_queued: 512, timeout_ms: 60000}
      """;

  @Test
  void requestsOfVanishedClientsLeaveNoQueueSlotWorkerOrMemoryBehind() {
    try (ServingCluster cluster = ServingCluster.start("node-1")) {
      cluster.deploy(YAML);
      cluster.awaitReady("slow", 1);
      ServingNode node = cluster.node("node-1");
      int port = node.httpPort();
      String body = OipRequest.fp32("x", new long[] {1, 2}, 200f, 0f).json();
      long heapBefore = Figures.heapAfterGc();

      List<Http.Held> held = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        held.add(new Http.Held(port, "/v2/models/slow/infer", body));
      }
      await().atMost(ServingCluster.WAIT).until(() -> cluster.stats("slow", "1", "node-1").queueDepth() >= CLIENTS - 2);
      long vanishedAt = System.nanoTime();
      held.forEach(Http.Held::close);

      await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
        PoolStats s = cluster.stats("slow", "1", "node-1");
        return s.outstanding() == 0 && s.busyWorkers() == 0 && inFlight(node) == 0;
      });
      long drainedMs = (System.nanoTime() - vanishedAt) / 1_000_000;
      PoolStats stats = cluster.stats("slow", "1", "node-1");
      // Every vanished client's request is accounted for by the pool: withdrawn, or finished (answered to nobody,
      // refused, expired or failed). One it cannot account for, or a slot, request or worker left, is lost.
      long accounted = stats.cancelled() + stats.completed() + stats.rejected() + stats.expired() + stats.failed()
          + stats.invalid();
      long unaccounted = Math.max(0, CLIENTS - accounted);
      long leftBehind = stats.queueDepth() + stats.inFlightRequests() + stats.busyWorkers() + Math.round(inFlight(node));
      long heapAfter = Figures.heapAfterGc();
      Http.Response next = new Http().postJson(port, "/v2/models/slow/infer",
          OipRequest.fp32("x", new long[] {1, 2}, 1f, 0f).json());

      new Figures("vanishing-clients").put("clients", CLIENTS).put("cancelledInPool", stats.cancelled())
          .put("completedInPool", stats.completed()).put("refusedExpiredOrFailedInPool", stats.rejected()
              + stats.expired() + stats.failed() + stats.invalid())
          .put("unaccountedFor", unaccounted).put("leftBehind", leftBehind).put("lost", unaccounted + leftBehind)
          .put("queueSlotsLeft", stats.queueDepth())
          .put("inFlightLeft", stats.inFlightRequests()).put("gatewayInFlightLeft", inFlight(node))
          .put("nextClientStatus", next.status())
          .put("drainedMs", drainedMs).put("heapGrowthBytes", heapAfter - heapBefore).write();

      assertThat(unaccounted + leftBehind).as("vanished clients' requests lost").isZero();
      assertThat(stats.cancelled()).as("withdrawn from the queue").isGreaterThanOrEqualTo(CLIENTS - 2);
      assertThat(stats.completed()).as("at most the batch running when they left, and the one after")
          .isLessThanOrEqualTo(2);
      assertThat(stats.idleWorkers()).isEqualTo(stats.totalWorkers()).isEqualTo(1);
      assertThat(heapAfter - heapBefore).isLessThan(64L << 20);
      assertThat(next.status()).isEqualTo(200);
    }
  }

  private static double inFlight(ServingNode node) {
    return node.registry().find("kiln.gateway.requests.in.flight").gauges().stream()
        .mapToDouble(io.micrometer.core.instrument.Gauge::value).sum();
  }
}
