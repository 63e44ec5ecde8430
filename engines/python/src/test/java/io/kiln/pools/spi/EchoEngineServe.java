package io.kiln.pools.spi;

import static io.kiln.runtime.testing.Await.result;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.EchoEngineJar;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.runtime.ActorHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Run by {@link ThirdPartyEngineTest} in a JVM whose class path holds the Echo engine's jar: finds the engine in the
 * JVM's registry, detects it from a model folder, and serves a request through a real pool on a one-node runtime.
 * Prints {@code RESULT key=value} lines for the test to read.
 */
public final class EchoEngineServe {

  private EchoEngineServe() {
  }

  public static void main(String[] args) throws Exception {
    Path folder = Files.createDirectories(Path.of(args[0]));
    Files.writeString(folder.resolve(EchoEngineJar.MODEL_FILE), "");
    System.out.println("RESULT engines=" + Engines.installed().names());
    System.out.println("RESULT detected=" + ModelFolders.engineOf(folder).orElse("none"));
    ModelSpec model = ModelSpec.builder().uri(folder).engine("echo").input("x", DataType.FP32, -1, 2)
        .output("y", DataType.FP32, -1, 2).build();
    try {
      ModelSpec.builder().uri(folder).engine(EchoEngineJar.NAME).input("x", DataType.FP32, -1, 2).build();
    } catch (IllegalArgumentException e) {
      System.out.println("RESULT refused=" + e.getMessage());
    }
    try (PoolNodes nodes = new PoolNodes("a")) {
      ActorHandle<PoolManager> m = nodes.start(PoolNodes.spec("echo", "a", model, PoolConfig.DEFAULTS, 1, 0), 1);
      InferenceRequest request = new InferenceRequest("r1",
          List.of(Tensor.ofFloats("x", new long[] {1, 2}, new float[] {1.5f, -2f})), List.of(), Map.of());
      InferenceResponse r = result(m.callAsync(PoolManager::infer, request, 30_000L), PoolNodes.WAIT);
      Tensor y = r.outputs().get(0);
      System.out.println("RESULT output=" + y.name() + Arrays.toString(y.asFloats()));
    }
    System.out.flush();
    System.exit(0);
  }
}
