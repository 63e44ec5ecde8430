package io.kiln.serve.controller;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolSpec;
import io.kiln.runtime.Resources;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A node's own pool (its start-up warm-up, named {@code _...}) is no deployment's: the leader's controller
 * neither retires it as unwanted nor lists it, while a pool of a deployment nobody wants is retired.
 */
class NodeLocalPoolTest {

  private static PoolSpec pool(String name, String node) {
    ModelSpec model = ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
        .input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 4).build();
    return new PoolSpec(name, "1", node, model, PoolConfig.DEFAULTS, 1, Resources.NONE, 0);
  }

  @Test
  void theControllerLeavesNodeLocalPoolsAloneAndRetiresUnwantedOnes() {
    try (ServeNodes nodes = new ServeNodes("node-a")) {
      var runtime = nodes.leader().runtime();
      String local = PoolNames.NODE_LOCAL_PREFIX + "warmup-test";
      assertThat(PoolNames.isNodeLocal(local)).isTrue();
      result(PoolManager.getOrCreate(runtime, pool(local, "node-a")));
      result(PoolManager.getOrCreate(runtime, pool("ghost", "node-a")));
      nodes.apply(ServeNodes.identity("real", "1", "pool: {workers_per_node: 1}"));
      nodes.awaitReady("real", "1");

      await().atMost(ServeNodes.WAIT).until(() -> nodes.managers("ghost").isEmpty());
      // Many passes later (one every 100 ms) the node's own pool still runs, unlisted.
      await().during(Duration.ofSeconds(1)).atMost(ServeNodes.WAIT)
          .until(() -> nodes.managers(local).size() == 1);
      assertThat(nodes.leader().serve().statuses()).containsOnlyKeys("real");
      assertThat(nodes.leader().serve().desired()).containsOnlyKeys("real");
    }
  }
}
