package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #27 across two clustered nodes: while one deployment fails to load on both, both nodes stay ready (a
 * Kubernetes Service keeps them) and each serves the healthy deployment from its own pool; the failing model's
 * readiness on each node is 503 naming its failure.
 */
@Tag("slow")
class ReadinessAcrossNodesTest {

  private static final String REQUEST =
      OipRequest.fp32("x", new long[] {1, 2}, 1f, 2f).json();

  private final Http http = new Http();

  @Test
  void bothNodesStayReadyAndServeTheHealthyModelWhileAnotherFails(@TempDir Path dir) throws Exception {
    Path noModel = Files.createDirectories(dir.resolve("no-model"));
    try (ServingCluster cluster = ServingCluster.start("node-1", "node-2")) {
      cluster.deploy(OnnxLoadFailureTest.STEADY + """
            - name: broken
              version: "1"
              model:
                uri: %s
                engine: OnnxRuntime
                inputs:  [{name: input, datatype: FP32, shape: [-1, 4]}]
                outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
              pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, max_restarts: 0}
          """.formatted(noModel));
      cluster.awaitReady("steady", 2);
      await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(50)).until(() -> cluster.nodeIds().stream()
          .allMatch(id -> {
            DeploymentStatus s = cluster.node(id).serve().statuses().get("broken");
            return s != null && s.phase() == DeploymentStatus.Phase.FAILED;
          }));
      String failure = cluster.node("node-1").serve().statuses().get("broken").failure();
      assertThat(failure).contains(noModel.toString());

      for (String id : cluster.nodeIds()) {
        int port = cluster.node(id).httpPort();
        Http.Response ready = http.get(port, "/v2/health/ready");
        assertThat(ready.status()).as("%s: %s", id, ready.text()).isEqualTo(200);
        // Served by this node's own pool: the locality hint is hard.
        Http.Response served = http.postJson(port, "/v2/models/steady/infer", REQUEST, "kiln-node", id);
        assertThat(served.status()).as("%s: %s", id, served.text()).isEqualTo(200);
        assertThat(http.get(port, "/v2/models/steady/ready").status()).isEqualTo(200);
        Http.Response broken = http.get(port, "/v2/models/broken/ready");
        assertThat(broken.status()).isEqualTo(503);
        assertThat(broken.text()).contains("model 'broken'", "FAILED", noModel.toString());
      }
    }
  }
}
