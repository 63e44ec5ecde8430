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
import io.kiln.testkit.PromText;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU metrics of assembled nodes in Prometheus text, with a real process standing in for nvidia-smi (no GPU
 * is used): its n-th devices answer reports GPU 0 with n*1000 MiB used of 143771 MiB at 37 %, and its compute
 * apps are every Python worker process on this machine with 512 MiB each. Node {@code gpu-node} samples it
 * every second; node {@code cpu-node} has no GPUs found and so no GPU meters. A Python worker on the GPU
 * (numpy ignores the device) and a built-in CPU worker run on them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class GpuMetricsEndToEndTest {

  private static final double MIB = 1 << 20;
  private static final String YAML = """
      deployments:
        - name: py-gpu
          version: "1"
          model:
            uri: deploy/examples/python
            engine: Python
            python: {interpreter: %s, config: {weights: mlp.npz}}
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
            threads: {intra_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5, GPU: 1}}
        - name: ident
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
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
    Path counter = dir.resolve("count");
    Files.writeString(smi, "#!/bin/sh\nn=$(cat '" + counter + "' 2>/dev/null || echo 0)\n"
        + "case \"$1\" in\n"
        + "  --query-gpu=*) n=$((n+1)); echo $n > '" + counter + "'; echo \"0, $((n*1000)), 143771, 37\";;\n"
        + "  --query-compute-apps=*) for p in /proc/[0-9]*; do\n"
        + "      if grep -q kiln_worker \"$p/cmdline\" 2>/dev/null; then echo \"${p#/proc/}, GPU-fake-0, 512\"; fi\n"
        + "    done;;\n"
        + "esac\n");
    Files.setPosixFilePermissions(smi, PosixFilePermissions.fromString("rwxr-xr-x"));
    cluster = LocalCluster.create();
    gpuNode = node("gpu-node", Resources.cpu(2).withGpu(1),
        new GpuSampling(List.of(0), GpuSampler.Options.of(smi.toString()).withPeriod(Duration.ofSeconds(1))));
    cpuNode = node("cpu-node", Resources.cpu(2), null);
    ServingCluster.join(gpuNode.serve().apply(YAML.formatted(PythonInterpreter.path()),
        ServingCluster.repositoryRoot().resolve("e2e.yaml"), false));
    await().atMost(ServingCluster.WAIT).until(() -> ready("py-gpu") && ready("ident"));
  }

  private ServingNode node(String id, Resources resources, GpuSampling gpus) {
    var rt = ServingCluster.join(cluster.startNode(new NodeOptions(id, ServingCluster.HOST, resources, Map.of())));
    GatewayOptions options = GatewayOptions.builder().host(ServingCluster.HOST).httpPort(0).grpcPort(0).build();
    return ServingCluster.join(ServingNode.start(rt, options, null, dir.resolve("home-" + id), gpus));
  }

  private boolean ready(String name) {
    DeploymentStatus s = gpuNode.serve().statuses().get(name);
    return s != null && s.phase() == DeploymentStatus.Phase.READY;
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
  void aNodeWithGpusShowsEachDevicesMemoryAndUtilisationInBaseUnits() {
    Map<String, String> gpu0 = Map.of("gpu", "0", "node", "gpu-node");
    // The gauges follow the tool: each sample reports 1000 MiB more.
    await().atMost(Duration.ofSeconds(60)).until(
        () -> PromText.parse(metrics(gpuNode)).sum("kiln_gpu_memory_used_bytes", gpu0) >= 2000 * MIB);
    String text = metrics(gpuNode);

    assertThat(text).contains("# TYPE kiln_gpu_memory_used_bytes gauge", "# TYPE kiln_gpu_memory_total_bytes gauge",
        "# TYPE kiln_gpu_utilization_ratio gauge", "# TYPE kiln_gpu_samples_failed_total counter");
    assertThat(PromText.parse(text).sum("kiln_gpu_memory_total_bytes", gpu0)).isEqualTo(143771 * MIB);
    assertThat(PromText.parse(text).sum("kiln_gpu_utilization_ratio", gpu0)).isEqualTo(0.37);
    assertThat(PromText.parse(text).sum("kiln_gpu_samples_failed_total", Map.of("query", "gpu", "node", "gpu-node")))
        .isZero();
    assertThat(PromText.parse(text).sum("kiln_gpu_samples_failed_total", Map.of("query", "compute-apps"))).isZero();
  }

  @Test
  void workersShowTheirDeviceAndAPythonWorkerItsProcesssMemory() {
    Map<String, String> pyWorker = Map.of("deployment", "py-gpu", "version", "1", "node", "gpu-node", "worker", "0",
        "device", "gpu(0)");
    await().atMost(Duration.ofSeconds(60)).until(() -> PromText.parse(metrics(gpuNode)).sum("kiln_pool_worker_gpu_memory_bytes",
        Map.of("deployment", "py-gpu", "method", "process")) == 512 * MIB);
    String text = metrics(gpuNode);

    assertThat(PromText.parse(text).sum("kiln_pool_worker_device_info", pyWorker)).isEqualTo(1);
    assertThat(PromText.parse(text).sum("kiln_pool_worker_device_info",
        Map.of("deployment", "ident", "node", "gpu-node", "device", "cpu()"))).isEqualTo(1);
    assertThat(PromText.parse(text).sum("kiln_pool_worker_gpu_memory_bytes", Map.of("deployment", "ident"))).isEqualTo(-1);
  }

  @Test
  void prometheusOwnLinterAcceptsEveryKilnSeries() throws Exception {
    await().atMost(Duration.ofSeconds(60)).until(() -> PromText.parse(metrics(gpuNode)).sum("kiln_pool_worker_gpu_memory_bytes",
        Map.of("deployment", "py-gpu", "method", "process")) == 512 * MIB);
    String text = metrics(gpuNode);
    assertThat(text).contains("kiln_gpu_memory_used_bytes", "kiln_pool_worker_device_info");

    Promtool.Result lint = Promtool.checkMetrics(text);

    // promtool names each problem by metric; Micrometer's own JVM/process meters have known naming nits.
    assertThat(lint.problems()).as("promtool check metrics:%n%s", lint.output())
        .noneMatch(line -> line.startsWith("kiln_"));
    // The check can fail: promtool does name a badly named Kiln series.
    assertThat(Promtool.checkMetrics("# HELP kiln_x_ms x\n# TYPE kiln_x_ms counter\nkiln_x_ms 1\n").problems())
        .anyMatch(line -> line.startsWith("kiln_x_ms"));
  }

  @Test
  void aNodeWithoutGpusHasNoGpuSeries() {
    String text = metrics(cpuNode);
    assertThat(text).contains("kiln_pool_worker_loads_total"); // its identity worker runs there
    assertThat(text).doesNotContain("kiln_gpu_").doesNotContain("kiln_pool_worker_device_info")
        .doesNotContain("kiln_pool_worker_gpu_memory");
  }
}
