package io.kiln.pools.testsupport;

import static io.kiln.runtime.testing.Await.result;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.PoolStatus;
import io.kiln.pools.WorkerState;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.Resources;
import io.kiln.runtime.testing.TestNodes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * In-process Kiln nodes (one {@link LocalCluster}) for pool tests, each with its own meter registry, and
 * helpers to start pools and wait for them.
 */
public final class PoolNodes implements AutoCloseable {

  /** Generous for 2 loaded cores: loading the MLP takes 0.3–1 s there. */
  public static final Duration WAIT = Duration.ofSeconds(60);

  public final LocalCluster cluster = LocalCluster.create();
  private final Map<String, KilnRuntime> nodes = new LinkedHashMap<>();
  private final Map<String, SimpleMeterRegistry> registries = new LinkedHashMap<>();

  /** Resources of every node: plenty of CPU, and 3 {@value #SLOT}s for tests of scaling up to resources. */
  public static final Resources NODE = Resources.cpu(16).with(PoolNodes.SLOT, 3);
  public static final String SLOT = "test_slot";

  /** Starts nodes with {@link #NODE} resources each. */
  public PoolNodes(String... nodeIds) {
    for (String id : nodeIds) {
      KilnRuntime rt = TestNodes.start(cluster, id, NODE);
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      rt.registerLocalService(MeterRegistry.class, registry);
      nodes.put(id, rt);
      registries.put(id, registry);
    }
    await().atMost(WAIT).until(() -> node(nodeIds[0]).clusterView().aliveNodes().size() == nodeIds.length);
  }

  public KilnRuntime node(String id) {
    return nodes.get(id);
  }

  public SimpleMeterRegistry registry(String nodeId) {
    return registries.get(nodeId);
  }

  /** The MLP of {@code models/mlp}, one intra-op thread so several workers share 2 cores. */
  public static ModelSpec mlp() {
    return ProjectModels.mlp().intraOpThreads(1).interOpThreads(1).build();
  }

  /** A built-in model with one FP32 input {@code x} of shape [-1, 4]. */
  public static ModelSpec builtin(String uri) {
    return ModelSpec.builder().uri(uri).engine(ModelSpec.ENGINE_BUILTIN).input("x", DataType.FP32, -1, 4).build();
  }

  public static PoolSpec spec(String deployment, String nodeId, ModelSpec model, PoolConfig config, int workers,
                              int maxRestarts) {
    return new PoolSpec(deployment, "1", nodeId, model, config, workers, Resources.cpu(1), maxRestarts);
  }

  /** Creates the pool's manager on its node (from that node) and waits until {@code readyWorkers} are ready. */
  public ActorHandle<PoolManager> start(PoolSpec spec, int readyWorkers) {
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(node(spec.nodeId()), spec), WAIT);
    awaitReady(m, readyWorkers);
    return m;
  }

  public static PoolStatus awaitReady(ActorHandle<PoolManager> m, int readyWorkers) {
    await().atMost(WAIT).until(() -> result(m.call(PoolManager::status)).count(WorkerState.READY) == readyWorkers);
    return result(m.call(PoolManager::status));
  }

  /** Models loaded by workers on {@code nodeId}, per the {@code kiln.pool.worker.loads} counter. */
  public double loads(String nodeId, String deployment) {
    Counter c = registry(nodeId).find("kiln.pool.worker.loads").tag("deployment", deployment).counter();
    return c == null ? 0 : c.count();
  }

  @Override
  public void close() {
    cluster.close();
  }
}
