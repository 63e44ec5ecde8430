package io.kiln.runtime.testing;

import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.util.Map;

/** Starts in-process nodes for tests. */
public final class TestNodes {

  private TestNodes() {
  }

  public static NodeOptions node(String id, Resources resources) {
    return new NodeOptions(id, "127.0.0.1", resources, Map.of());
  }

  /** A single node with its own Vert.x, closed with it. */
  public static KilnRuntime single(String id, Resources resources) {
    return Await.result(LocalCluster.singleNode(node(id, resources)));
  }

  public static KilnRuntime start(LocalCluster cluster, String id, Resources resources) {
    return Await.result(cluster.startNode(node(id, resources)));
  }
}
