package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.GatewayTestBase;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The gRPC port grants each call a 4 MiB HTTP/2 flow-control window where Vert.x's default is 64 KiB, so a client
 * sends an MB-sized tensor without stopping for the server's window updates (issue #36). Messages of every size
 * still round-trip: {@link LargeMessageOffloadTest}, {@link GrpcDirectInferTest}.
 */
class GrpcWindowsTest extends GatewayTestBase {

  @Test
  void theGrpcPortAdvertisesA4MiBStreamWindow() {
    HttpClient h2 = vertx.createHttpClient(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
        .setHttp2ClearTextUpgrade(false));
    try {
      HttpConnection connection = join(h2.request(HttpMethod.POST, gateway.grpcPort(), HOST,
          "/inference.GRPCInferenceService/ServerLive")).connection();
      // The server's SETTINGS frame may follow the connection's opening: wait for it rather than read defaults.
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
          assertThat(connection.remoteSettings().getInitialWindowSize()).isEqualTo(4 << 20));
    } finally {
      join(h2.close());
    }
  }
}
