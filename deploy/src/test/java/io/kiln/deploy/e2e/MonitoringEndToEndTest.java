package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.GpuSampling;
import io.kiln.deploy.node.ServingNode;
import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metrics of two assembled nodes, scraped from their real {@code /metrics} after real traffic, against what the
 * monitoring files expect: Prometheus's {@code promtool check metrics} finds nothing to say about any Kiln series;
 * the latency and size meters are histograms (buckets, no client-side quantiles); the cluster and deployment-phase
 * gauges follow the cluster (a deployment whose model does not load reads FAILED); and every metric name the
 * Grafana dashboard, the alert rules and their unit tests use is one the nodes export, so that a rename cannot
 * silently blank a panel or mute an alert. Node {@code gpu-node} samples a stand-in nvidia-smi (a script: GPU 0,
 * 1000 MiB used of 143771 MiB, 37 %), so its GPU meters are there; no GPU is used.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class MonitoringEndToEndTest {

  private static final String YAML = """
      deployments:
        - name: ident
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}}
        - name: chunks
          version: "1"
          model:
            uri: builtin:chunks
            engine: Builtin
            streaming: true
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}}
        - name: broken
          version: "1"
          model:
            uri: %s
            engine: PyTorch
            inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}, max_restarts: 0}
      """;

  @TempDir
  static Path dir;

  private final Http http = new Http();
  private LocalCluster cluster;
  private ServingNode gpuNode;
  private ServingNode cpuNode;

  @BeforeAll
  void start() throws IOException {
    Path smi = dir.resolve("nvidia-smi");
    Files.writeString(smi, "#!/bin/sh\ncase \"$1\" in\n  --query-gpu=*) echo \"0, 1000, 143771, 37\";;\nesac\n");
    Files.setPosixFilePermissions(smi, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path broken = Files.createDirectories(dir.resolve("broken"));
    Files.write(broken.resolve("model.pt"), "this is not a TorchScript archive".getBytes());
    cluster = LocalCluster.create();
    gpuNode = node("gpu-node", Resources.cpu(2).withGpu(1),
        new GpuSampling(List.of(0), GpuSampler.Options.of(smi.toString()).withPeriod(Duration.ofSeconds(1))));
    cpuNode = node("cpu-node", Resources.cpu(2), null);
    ServingCluster.join(gpuNode.serve().apply(YAML.formatted(broken), dir.resolve("monitoring.yaml"), false));
    await().atMost(ServingCluster.WAIT).until(() -> phase("ident") == DeploymentStatus.Phase.READY
        && phase("chunks") == DeploymentStatus.Phase.READY && phase("broken") == DeploymentStatus.Phase.FAILED);

    int port = gpuNode.httpPort();
    for (int i = 0; i < 5; i++) {
      assertThat(http.postJson(port, "/v2/models/ident/infer",
          OipRequest.fp32("x", new long[] {1, 2}, 1, i).json()).status())
          .isEqualTo(200);
    }
    assertThat(http.postJson(port, "/v2/models/ident/infer", "{\"inputs\":[]}").status()).isEqualTo(400);
    Http.Response stream = http.postJson(port, "/v2/models/chunks/generate_stream",
        "{\"x\":[0,0],\"parameters\":{\"chunks\":3}}");
    assertThat(stream.status()).isEqualTo(200);
  }

  private ServingNode node(String id, Resources resources, GpuSampling gpus) {
    var rt = ServingCluster.join(cluster.startNode(new NodeOptions(id, ServingCluster.HOST, resources, Map.of())));
    GatewayOptions options = GatewayOptions.builder().host(ServingCluster.HOST).httpPort(0).grpcPort(0).build();
    return ServingCluster.join(ServingNode.start(rt, options, null, dir.resolve("home-" + id), gpus));
  }

  private DeploymentStatus.Phase phase(String name) {
    DeploymentStatus s = gpuNode.serve().statuses().get(name);
    return s == null ? null : s.phase();
  }

  @AfterAll
  void stop() {
    for (ServingNode n : new ServingNode[] {gpuNode, cpuNode}) {
      if (n != null) {
        n.close();
      }
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String metrics(ServingNode n) {
    return PromText.scrape(ServingCluster.HOST, n.httpPort()).text();
  }

  @Test
  void prometheusOwnLinterAcceptsEveryKilnSeriesOfBothNodes() throws Exception {
    Path out = Files.createDirectories(Path.of("target", "monitoring"));
    for (ServingNode n : List.of(gpuNode, cpuNode)) {
      String text = metrics(n);
      Files.writeString(out.resolve("metrics-" + n.nodeId() + ".txt"), text); // to read: what a node exports
      Promtool.Result lint = Promtool.checkMetrics(text);
      assertThat(lint.problems()).as("promtool check metrics on %s:%n%s", n.nodeId(), lint.output())
          .noneMatch(line -> line.startsWith("kiln_"));
    }
  }

  @Test
  void latenciesSizesAndLoadTimesAreHistogramsThatAggregate() {
    String text = metrics(gpuNode);
    for (String histogram : List.of("kiln_pool_queue_duration_seconds", "kiln_pool_compute_duration_seconds",
        "kiln_pool_batch_size_rows", "kiln_gateway_request_duration_seconds", "kiln_gateway_stream_first_chunk_seconds",
        "kiln_gateway_stream_chunk_interval_seconds", "kiln_pool_worker_load_duration_seconds",
        "kiln_pool_worker_warmup_duration_seconds")) {
      assertThat(text).as(histogram).contains("# TYPE " + histogram + " histogram")
          .contains(histogram + "_bucket{").contains(histogram + "_count{");
    }
    assertThat(text.lines().filter(l -> l.startsWith("kiln_"))).noneMatch(l -> l.contains("quantile="));
    assertThat(PromText.parse(text).sum("kiln_pool_queue_duration_seconds_count", Map.of("deployment", "ident")))
        .as("every answered request waited in a queue once").isGreaterThanOrEqualTo(5);
    assertThat(PromText.parse(text).sum("kiln_pool_worker_load_duration_seconds_count",
        Map.of("deployment", "ident", "node", "gpu-node"))).isEqualTo(1);
    assertThat(PromText.parse(text).sum("kiln_pool_worker_restarts_total", Map.of("deployment", "ident"))).isZero();
    assertThat(PromText.parse(text).sum("kiln_pool_queue_capacity", Map.of("deployment", "ident", "node", "gpu-node")))
        .isEqualTo(512);
    // The names this change replaced are gone.
    assertThat(text).doesNotContain("kiln_pool_inflight").doesNotContain("kiln_pool_queue_time_seconds")
        .doesNotContain("kiln_pool_compute_time_seconds").doesNotContain("kiln_gateway_streams_active");
  }

  @Test
  void everyNodeShowsTheClusterSizeAndEachDeploymentsPhase() {
    for (ServingNode n : List.of(gpuNode, cpuNode)) {
      await().atMost(ServingCluster.WAIT).untilAsserted(() -> {
        String text = metrics(n);
        assertThat(PromText.parse(text).sum("kiln_cluster_nodes", Map.of())).isEqualTo(2);
        assertThat(PromText.parse(text).sum("kiln_deployment_phase", Map.of("deployment", "ident", "phase", "ready")))
            .isEqualTo(1);
        assertThat(PromText.parse(text).sum("kiln_deployment_phase", Map.of("deployment", "ident"))).as("one phase at a time")
            .isEqualTo(1);
        assertThat(PromText.parse(text).sum("kiln_deployment_phase", Map.of("deployment", "broken", "phase", "failed")))
            .isEqualTo(1);
        assertThat(PromText.parse(text).sum("kiln_deployment_phase", Map.of("deployment", "broken", "phase", "ready")))
            .isZero();
      });
    }
  }

  @Test
  void everyMetricTheDashboardAndTheAlertsUseIsExported() {
    Set<String> referenced = new TreeSet<>(MonitoringFiles.referencedNames());
    assertThat(referenced).contains("kiln_gateway_request_duration_seconds_bucket", "kiln_pool_queue_depth",
        "kiln_deployment_phase", "kiln_gpu_memory_used_bytes", "up");
    // These nodes serve no text-generation model: LlmMetricsEndToEndTest checks those names on one that does.
    referenced.removeIf(MonitoringFiles::generative);
    Set<String> exported = new TreeSet<>();
    exported.add("up"); // Prometheus's own, for every target
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
      exported.addAll(MonitoringFiles.sampleNames(metrics(gpuNode)));
      exported.addAll(MonitoringFiles.sampleNames(metrics(cpuNode)));
      assertThat(exported).as("names the monitoring files use that no node exports").containsAll(referenced);
    });
  }
}
