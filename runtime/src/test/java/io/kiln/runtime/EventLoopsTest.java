package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.util.concurrent.EventExecutor;
import io.vertx.core.Vertx;
import io.vertx.core.internal.VertxInternal;
import org.junit.jupiter.api.Test;

/**
 * A node's Vert.x runs one event loop per core the process may use (see {@code KilnCluster.eventLoops}); the
 * clustered node's is checked in {@link ClusteredInProcessTest}.
 */
class EventLoopsTest {

  /** How many event loops {@code vertx} runs. */
  static int eventLoops(Vertx vertx) {
    int n = 0;
    for (EventExecutor ignored : ((VertxInternal) vertx).nettyEventLoopGroup()) {
      n++;
    }
    return n;
  }

  @Test
  void aLocalClusterRunsOneEventLoopPerCore() {
    LocalCluster cluster = LocalCluster.create();
    try {
      assertThat(eventLoops(cluster.vertx())).isEqualTo(Runtime.getRuntime().availableProcessors());
    } finally {
      cluster.close();
    }
  }
}
