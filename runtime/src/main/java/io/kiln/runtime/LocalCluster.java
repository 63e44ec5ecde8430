package io.kiln.runtime;

import io.kiln.runtime.impl.InMemoryCluster;
import io.kiln.runtime.impl.RuntimeImpl;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Kiln nodes in one process: one Vert.x instance and an in-memory cluster backend shared by any number of
 * nodes. A single node is how {@code kiln up} runs; several nodes make multi-node behaviour (placement,
 * affinity, node death) testable in milliseconds. Messages between these nodes pass by reference; the
 * Hazelcast-backed cluster is where they are encoded.
 */
public final class LocalCluster implements AutoCloseable {

  private final Vertx vertx;
  private final InMemoryCluster cluster = new InMemoryCluster();
  private final Map<String, RuntimeImpl> nodes = new ConcurrentHashMap<>();
  private final boolean ownsVertx;

  private LocalCluster(Vertx vertx, boolean ownsVertx) {
    this.vertx = vertx;
    this.ownsVertx = ownsVertx;
  }

  /** A cluster on a new Vert.x instance (one event loop per core, as a clustered node's), closed with the cluster. */
  public static LocalCluster create() {
    return new LocalCluster(Vertx.vertx(new VertxOptions().setPreferNativeTransport(false)
        .setEventLoopPoolSize(KilnCluster.eventLoops())), true);
  }

  /** A cluster on an existing Vert.x instance, which the caller keeps and closes. */
  public static LocalCluster on(Vertx vertx) {
    return new LocalCluster(vertx, false);
  }

  /**
   * Starts a single node whose cluster (and Vert.x) is closed when the node shuts down: the runtime of
   * {@code kiln up}.
   */
  public static CompletionStage<KilnRuntime> singleNode(NodeOptions node) {
    LocalCluster lc = create();
    return lc.start(node, lc::closeAsync).toCompletionStage();
  }

  public Vertx vertx() {
    return vertx;
  }

  /** Starts a node that joins this cluster. */
  public CompletionStage<KilnRuntime> startNode(NodeOptions node) {
    return start(node, () -> Future.succeededFuture()).toCompletionStage();
  }

  private Future<KilnRuntime> start(NodeOptions node, java.util.function.Supplier<Future<Void>> onShutdown) {
    var backend = cluster.join(node.nodeId());
    return RuntimeImpl.start(vertx, backend, node, () -> {
      nodes.remove(node.nodeId());
      return onShutdown.get();
    }).map(rt -> {
      nodes.put(node.nodeId(), rt);
      return (KilnRuntime) rt;
    });
  }

  /**
   * Kills a node abruptly, as SIGKILL would: it leaves membership without cleaning up, its actors stop
   * answering, and the surviving nodes must notice and repair.
   */
  public void crash(String nodeId) {
    RuntimeImpl rt = nodes.remove(nodeId);
    cluster.crash(nodeId);
    if (rt != null) {
      rt.crash();
    }
  }

  private Future<Void> closeAsync() {
    cluster.close();
    return ownsVertx ? vertx.close() : Future.succeededFuture();
  }

  /** Shuts down every node, then the cluster. */
  @Override
  public void close() {
    for (RuntimeImpl rt : nodes.values()) {
      rt.close();
    }
    closeAsync().toCompletionStage().toCompletableFuture().join();
  }
}
