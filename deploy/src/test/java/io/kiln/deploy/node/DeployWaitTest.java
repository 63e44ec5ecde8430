package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kiln deploy --wait} on a real node: exit 0 once every deployment of the file is READY, 1 naming the
 * deployment and its reason when one goes FAILED (a real ONNX model declared with a wrong input), 1 naming what is
 * not ready when {@code --timeout} passes (a deployment no node can host).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class DeployWaitTest {

  private ManagedNode node;

  @BeforeAll
  void start() {
    node = new ManagedNode(null);
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
  }

  static String identity(String name, String pool) {
    return """
        deployments:
          - name: %s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: input, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: %s
        """.formatted(name, pool);
  }

  @Test
  void itReturnsZeroOnceEveryDeploymentIsReady(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("ready.yaml"), identity("waited", "{workers_per_node: 1}")
        + identity("waited-too", "{workers_per_node: 1}").replace("deployments:\n", ""));
    CliRun r = CliRun.kiln(node, "deploy", file.toString(), "--wait", "--timeout", "120");
    assertThat(r.code()).as(r.out() + r.err()).isZero();
    assertThat(r.out()).contains("waiting up to 120 s for 2 deployment(s):")
        .contains("  waited 1: READY").contains("  waited-too 1: READY").contains("all 2 deployment(s) ready");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void aFailedDeploymentIsNamedWithItsReason(@TempDir Path dir) throws IOException {
    Path model = io.kiln.deploy.KilnCommands.repositoryRoot().resolve("models/mlp-onnx");
    Path file = Files.writeString(dir.resolve("failing.yaml"), """
        deployments:
          - name: broken
            version: "1"
            model:
              uri: %s
              engine: OnnxRuntime
              inputs:  [{name: pixels, datatype: FP32, shape: [-1, 64]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
              threads: {intra_op: 1, inter_op: 1}
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, max_restarts: 1}
        """.formatted(model));
    CliRun r = CliRun.kiln(node, "deploy", file.toString(), "--wait", "--timeout", "120");
    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
    assertThat(r.out()).contains("  broken 1: FAILED");
    assertThat(r.err()).startsWith("kiln: deployment broken failed: ").contains("pixels");
  }

  @Test
  void theTimeoutNamesWhatIsNotReady(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("nowhere.yaml"),
        identity("nowhere", "{workers_per_node: 1, node_selector: {zone: nowhere}}"));
    CliRun r = CliRun.kiln(node, "deploy", file.toString(), "--wait", "--timeout", "2");
    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
    assertThat(r.err()).startsWith("kiln: timed out after 2 s; not ready: nowhere (");
  }

  @Test
  void aTimeoutUnderOneSecondIsRefused(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("t.yaml"), identity("never", "{workers_per_node: 1}"));
    CliRun r = CliRun.kiln(node, "deploy", file.toString(), "--wait", "--timeout", "0");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err().trim()).isEqualTo("kiln: --timeout must be at least 1 second, got 0");
    assertThat(node.serve.desired()).doesNotContainKey("never");
  }
}
