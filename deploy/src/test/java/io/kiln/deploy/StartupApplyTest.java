package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.deploy.node.WarmupOptions;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kiln start --apply FILE} on a real in-process node: the file is the whole truth, so a deployment removed
 * from it (from the ConfigMap, on Kubernetes) is deleted when the file is applied again at the next start.
 */
@Tag("slow")
class StartupApplyTest {

  static final Duration WAIT = Duration.ofSeconds(60);

  static String deployment(String name) {
    return """
          - name: %s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
        """.formatted(name);
  }

  @Test
  void aDeploymentRemovedFromTheFileIsPrunedWhenItIsAppliedAgain(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("app.yaml"), "deployments:\n" + deployment("stays")
        + deployment("removed"));
    KilnNode node = KilnNode.start(new KilnNode.Options(new NodeOptions("startup", "127.0.0.1", Resources.cpu(2),
        Map.of()), null, 0, 0, null, Duration.ofSeconds(30), null, WarmupOptions.OFF)).toCompletableFuture().join();
    try {
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      assertThat(StartupApply.read(file).applyOn(node, new PrintWriter(out), new PrintWriter(err))).as(err.toString())
          .isTrue();
      assertThat(out.toString()).contains("2 deployment(s)").doesNotContain("pruned");
      assertThat(node.serve().desired()).containsKeys("stays", "removed");

      Files.writeString(file, "deployments:\n" + deployment("stays"));
      StringWriter again = new StringWriter();
      assertThat(StartupApply.read(file).applyOn(node, new PrintWriter(again), new PrintWriter(err)))
          .as(err.toString()).isTrue();
      assertThat(again.toString()).contains("kiln: pruned deployment removed (not in " + file + ")")
          .doesNotContain("pruned deployment stays");
      await().atMost(WAIT).until(() -> !node.serve().desired().containsKey("removed"));
      assertThat(node.serve().desired()).containsKey("stays");
    } finally {
      node.close();
    }
  }
}
