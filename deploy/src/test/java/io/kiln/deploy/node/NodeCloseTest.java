package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's close unbinds its gateway even when what had to end before it (the start-up warm-up's teardown, which
 * goes through the gateway) failed: the failure is logged and the node's port is still given back.
 */
@Tag("slow")
class NodeCloseTest {

  private static final String HOST = "127.0.0.1";

  @TempDir
  Path home;

  @Test
  void theGatewayIsUnboundEvenWhenWhatHadToEndBeforeItFailed() {
    LocalCluster cluster = LocalCluster.create();
    try {
      KilnRuntime runtime = ManagedNode.join(cluster.startNode(new NodeOptions("node-a", HOST, Resources.cpu(1),
          Map.of())));
      GatewayOptions options = GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0).bindJvmMetrics(false)
          .build();
      ServingNode node = ManagedNode.join(ServingNode.start(runtime, options, null, home, null, WarmupOptions.OFF));
      int http = node.httpPort();
      int grpc = node.grpcPort();
      assertThat(connects(http)).as("the HTTP port while the node runs").isTrue();

      ManagedNode.join(node.parts().closeAfter(
          CompletableFuture.failedFuture(new IllegalStateException("the warm-up's teardown failed"))));

      // Vert.x's acceptor thread closes a listening socket just after the close completes (a clean clone's run saw
      // one more connection accepted there, "Failed to register an accepted channel"): given back within seconds.
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        assertThat(connects(http)).as("the HTTP port after the close").isFalse();
        assertThat(connects(grpc)).as("the gRPC port after the close").isFalse();
      });
    } finally {
      cluster.close();
    }
  }

  private static boolean connects(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(HOST, port), 5_000);
      return true;
    } catch (IOException refused) {
      return false;
    }
  }
}
