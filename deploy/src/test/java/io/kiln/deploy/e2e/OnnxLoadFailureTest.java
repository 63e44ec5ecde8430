package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ONNX models that fail to load, on a node that serves another deployment under closed-loop load all along: a
 * truncated {@code model.onnx}, and a valid one whose YAML declares an input the graph does not have. Each goes
 * FAILED with a reason naming the file (or the input) and ONNX Runtime's own message, visible in the status and
 * through the management API; its load is tried at most {@code max_restarts + 1} times and then no more (no
 * retry storm), the other deployment loses no request, and fixing the file (or the YAML) and applying again
 * brings it READY and serving.
 */
@Tag("slow")
class OnnxLoadFailureTest {

  static final String STEADY = """
      deployments:
        - name: steady
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
      """;
  static final String ONNX = """
      deployments:
        - name: %s
          version: "1"
          model:
            uri: %s
            engine: OnnxRuntime
            inputs:  [{name: %s, datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
            threads: {intra_op: 1, inter_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, max_restarts: %d}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
      """;
  static final String NODE = "node-1";
  static final int MAX_RESTARTS = 2;

  private final Http http = new Http();

  @Test
  void aModelThatDoesNotLoadGoesFailedWithOnnxRuntimesReasonAndComesBackWhenFixed(@TempDir Path dir) throws Exception {
    Path good = ServingCluster.repositoryRoot().resolve("models/mlp-onnx/model.onnx");
    Path truncatedDir = Files.createDirectories(dir.resolve("truncated"));
    byte[] bytes = Files.readAllBytes(good);
    Files.write(truncatedDir.resolve("model.onnx"), java.util.Arrays.copyOf(bytes, bytes.length / 3));
    Path validDir = Files.createDirectories(dir.resolve("valid"));
    Files.copy(good, validDir.resolve("model.onnx"));

    try (ServingCluster cluster = ServingCluster.start(NODE)) {
      cluster.deploy(STEADY);
      cluster.awaitReady("steady", 1);
      int port = cluster.node(NODE).httpPort();
      LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
      LoadDriver.Running steady = driver.start(List.of(port), 2, i -> LoadDriver.row("steady", i, -i));

      Map<String, Object> truncated = failAndFix(cluster, port, steady, "onnx-truncated", truncatedDir, "input",
          () -> copy(good, truncatedDir.resolve("model.onnx")), "input",
          failure -> assertThat(failure).contains(truncatedDir.resolve("model.onnx").toString())
              .containsIgnoringCase("onnxruntime").containsIgnoringCase("protobuf parsing failed"));
      Map<String, Object> wrongInput = failAndFix(cluster, port, steady, "onnx-wrong-input", validDir, "pixels",
          () -> { }, "input",
          failure -> assertThat(failure).contains("pixels").contains("input"));

      LoadDriver.Outcome o = steady.stop();
      assertThat(o.lost()).as("lost: %s", o.lostReasons()).isZero();
      assertThat(o.clean()).as("the other deployment failed requests: %s", o.byStatus()).isZero();
      assertThat(o.ok()).isEqualTo(o.sent()).isPositive();

      new Figures("onnx-load-failure").put("maxRestarts", MAX_RESTARTS).put("truncated", truncated)
          .put("wrongInput", wrongInput).put("otherDeployment", o.figures()).write();
    }
  }

  private Map<String, Object> failAndFix(ServingCluster cluster, int port, LoadDriver.Running steady, String name,
                                         Path folder, String declaredInput, Runnable fixFile, String fixedInput,
                                         java.util.function.Consumer<String> checkFailure) {
    long appliedAt = System.nanoTime();
    cluster.deploy(ONNX.formatted(name, folder, declaredInput, MAX_RESTARTS));
    await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(20))
        .until(() -> phase(cluster, name) == DeploymentStatus.Phase.FAILED);
    long failedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - appliedAt);
    DeploymentStatus s = cluster.node(NODE).serve().statuses().get(name);
    checkFailure.accept(s.failure());

    Http.Response api = http.get(port, "/api/v1/deployments/" + name);
    assertThat(api.status()).as(api.text()).isEqualTo(200);
    assertThat(api.text()).contains("FAILED").contains(folder.toString());
    Http.Response infer = http.postJson(port, "/v2/models/" + name + "/infer", onnxRequest(fixedInput));
    assertThat(infer.status()).as("a failed model answers cleanly: %s", infer.text()).isIn(404, 503);

    // No retry storm: while the other deployment serves a few hundred more requests, the load is not tried again.
    double restarts = PythonWorkers.restartsMetric(cluster, name, NODE);
    long okBefore = steady.sofar().ok();
    await().atMost(ServingCluster.WAIT).until(() -> steady.sofar().ok() > okBefore + 300);
    assertThat(PythonWorkers.restartsMetric(cluster, name, NODE)).as("restarts after FAILED").isEqualTo(restarts)
        .isLessThanOrEqualTo(MAX_RESTARTS);
    assertThat(phase(cluster, name)).isEqualTo(DeploymentStatus.Phase.FAILED);

    fixFile.run();
    long fixedAt = System.nanoTime();
    cluster.deploy(ONNX.formatted(name, folder, fixedInput, MAX_RESTARTS));
    cluster.awaitReady(name, 1);
    long readyMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - fixedAt);
    Http.Response fixed = http.postJson(port, "/v2/models/" + name + "/infer", onnxRequest(fixedInput));
    assertThat(fixed.status()).as(fixed.text()).isEqualTo(200);

    Map<String, Object> f = new LinkedHashMap<>();
    f.put("failedAfterMs", failedMs);
    f.put("loadAttempts", Math.round(restarts) + 1);
    f.put("restartsAfterFailed", Math.round(PythonWorkers.restartsMetric(cluster, name, NODE) - restarts));
    f.put("failure", s.failure().length() > 700 ? s.failure().substring(0, 700) + "…" : s.failure());
    f.put("answerWhileFailed", infer.status());
    f.put("readyAfterFixMs", readyMs);
    return f;
  }

  private static DeploymentStatus.Phase phase(ServingCluster cluster, String name) {
    DeploymentStatus s = cluster.node(NODE).serve().statuses().get(name);
    return s == null ? null : s.phase();
  }

  private static String onnxRequest(String input) {
    float[] half = new float[64];
    java.util.Arrays.fill(half, 0.5f);
    return OipRequest.fp32(input, new long[] {1, 64}, half).json();
  }

  private static void copy(Path from, Path to) {
    try {
      Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
