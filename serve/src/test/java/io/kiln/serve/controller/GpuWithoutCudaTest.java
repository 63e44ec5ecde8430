package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A GPU deployment whose engine cannot use the GPU (here: the CPU-only PyTorch natives on a node that
 * declares a GPU) never serves from the CPU behind the user's back: the version goes FAILED with the cause
 * and the previous version keeps serving; only {@code allow_cpu_fallback: true} runs it on the CPU.
 */
@Tag("slow")
class GpuWithoutCudaTest {

  private static String mlpOnGpu(String version, String extra) {
    return """
        deployments:
          - name: echo
            version: "%s"
            model:
              uri: %s
              engine: PyTorch
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
              threads: {intra_op: 1, inter_op: 1}
        %s
            pool:
              workers_per_node: 1
              worker_resources: {GPU: 1}
              max_restarts: 0
        """.formatted(version, ProjectModels.modelsDir().resolve("mlp"), extra);
  }

  @Test
  void theVersionFailsWithTheCauseAndTheOldOneKeepsServingUnlessCpuFallbackIsAllowed() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("gpu-node", Resources.cpu(2).withGpu(1), Map.of());
      nodes.apply(ServeNodes.identity("echo", "1", """
          pool:
            workers_per_node: 1
            worker_resources: {CPU: 1}
          """));
      nodes.awaitReady("echo", "1");

      nodes.apply(mlpOnGpu("2", ""));
      DeploymentStatus failed = nodes.awaitPhase("echo", Phase.FAILED);

      assertThat(failed.version()).isEqualTo("2");
      assertThat(failed.servingVersion()).isEqualTo("1");
      assertThat(failed.failure()).contains("GPU 0 assigned but the PyTorch engine reports 0 CUDA device(s)")
          .contains("allow_cpu_fallback: true").contains("docs/gpu.md");
      assertThat(ServeNodes.echoes(nodes.infer("echo", ServeNodes.row(5)), 5)).isTrue();

      nodes.apply(mlpOnGpu("3", "      allow_cpu_fallback: true"));
      DeploymentStatus ready = nodes.awaitReady("echo", "3");
      assertThat(ready.servingVersion()).isEqualTo("3");
    }
  }
}
