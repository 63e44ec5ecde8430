package io.kiln.gateway;

import static io.kiln.gateway.support.GatewayTestBase.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.gateway.spi.DataLocator;
import io.kiln.gateway.support.FakeCluster;
import io.kiln.gateway.support.TestModels;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.ext.web.client.WebClient;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Options validation and the start/close lifecycle. */
class GatewayLifecycleTest {

  private Vertx vertx;
  private FakeCluster cluster;

  @BeforeEach
  void setUp() {
    vertx = Vertx.vertx();
    cluster = new FakeCluster(TestModels.all());
    cluster.addNode("node-a", true);
  }

  @AfterEach
  void tearDown() {
    join(vertx.close());
  }

  private static GatewayOptions.Builder loopback() {
    return GatewayOptions.builder().httpPort(0).grpcPort(0).bindJvmMetrics(false);
  }

  @Test
  void defaultsAreTheDocumentedOnes() {
    GatewayOptions o = GatewayOptions.defaults();
    assertThat(o.host()).isEqualTo("127.0.0.1");
    assertThat(o.httpPort()).isEqualTo(8000);
    assertThat(o.grpcPort()).isEqualTo(8001);
    assertThat(o.maxBodyBytes()).isEqualTo(64L * 1024 * 1024);
    assertThat(o.defaultTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(o.registry()).isNull();
    assertThat(o.requestReadTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(o.idleTimeout()).isEqualTo(Duration.ofSeconds(120));
    assertThat(o.effectiveIdleTimeout()).isEqualTo(Duration.ofSeconds(120));
    // A connection waiting for its answer is never idle-closed before the request's deadline.
    assertThat(o.toBuilder().defaultTimeout(Duration.ofMinutes(5)).build().effectiveIdleTimeout())
        .isEqualTo(Duration.ofSeconds(310));
    assertThat(o.httpEventLoops()).isBetween(1, GatewayOptions.MAX_DEFAULT_HTTP_EVENT_LOOPS)
        .isEqualTo(Math.min(4, Runtime.getRuntime().availableProcessors()));
    assertThat(o.toBuilder().build()).isEqualTo(o);
  }

  @Test
  void badOptionsAreRefusedWhenSet() {
    assertThatThrownBy(() -> GatewayOptions.builder().host(" ")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> GatewayOptions.builder().httpPort(70000)).hasMessageContaining("httpPort");
    assertThatThrownBy(() -> GatewayOptions.builder().grpcPort(-1)).hasMessageContaining("grpcPort");
    assertThatThrownBy(() -> GatewayOptions.builder().maxBodyBytes(0)).hasMessageContaining("maxBodyBytes");
    assertThatThrownBy(() -> GatewayOptions.builder().maxBodyBytes(1L << 40)).hasMessageContaining("maxBodyBytes");
    assertThatThrownBy(() -> GatewayOptions.builder().defaultTimeout(Duration.ZERO)).hasMessageContaining("defaultTimeout");
    assertThatThrownBy(() -> GatewayOptions.builder().retryAfterSeconds(-1)).hasMessageContaining("retryAfterSeconds");
    assertThatThrownBy(() -> GatewayOptions.builder().httpPort(9000).grpcPort(9000).build()).hasMessageContaining("differ");
    assertThatThrownBy(() -> GatewayOptions.builder().requestReadTimeout(Duration.ZERO)).hasMessageContaining("requestReadTimeout");
    assertThatThrownBy(() -> GatewayOptions.builder().idleTimeout(null)).hasMessageContaining("idleTimeout");
    assertThatThrownBy(() -> GatewayOptions.builder().httpEventLoops(0)).hasMessageContaining("httpEventLoops");
    assertThatThrownBy(() -> GatewayOptions.builder().httpEventLoops(65)).hasMessageContaining("httpEventLoops");
  }

  @Test
  void theRestPortIsServedFromAsManyEventLoopsAsConfigured() {
    assertThat(threadsServing(1)).hasSize(1);
    assertThat(threadsServing(3)).hasSize(3);
  }

  /** The distinct threads that answered 12 requests, each on a connection of its own. */
  private java.util.Set<String> threadsServing(int eventLoops) {
    KilnGateway gw = new KilnGateway(loopback().httpEventLoops(eventLoops).build(), cluster, cluster, DataLocator.NONE);
    gw.addRoutes(r -> r.get("/thread").handler(ctx -> ctx.response().end(Thread.currentThread().getName())));
    join(gw.start(vertx));
    java.util.Set<String> threads = new java.util.TreeSet<>();
    for (int i = 0; i < 12; i++) {
      // Without keep-alive every request opens a connection, and Vert.x hands connections round-robin to the
      // servers sharing the port.
      WebClient client = WebClient.create(vertx, new io.vertx.ext.web.client.WebClientOptions().setKeepAlive(false));
      threads.add(join(client.get(gw.httpPort(), "127.0.0.1", "/thread").send()).bodyAsString());
      client.close();
    }
    join(gw.close());
    return threads;
  }

  @Test
  void startCloseAndMetersLeaveASharedRegistry() {
    PrometheusMeterRegistry shared = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    KilnGateway gw = new KilnGateway(loopback().registry(shared).build(), cluster, cluster, DataLocator.NONE);
    assertThatThrownBy(gw::httpPort).isInstanceOf(IllegalStateException.class);
    join(gw.start(vertx));
    assertThat(gw.httpPort()).isPositive();
    assertThat(gw.grpcPort()).isPositive().isNotEqualTo(gw.httpPort());
    assertThat(gw.registry()).isSameAs(shared);
    assertThat(shared.find("kiln.gateway.requests.in.flight").gauge()).isNotNull();
    assertThatThrownBy(() -> gw.start(vertx)).isInstanceOf(IllegalStateException.class);

    WebClient client = WebClient.create(vertx);
    assertThat(join(client.get(gw.httpPort(), "127.0.0.1", "/v2/health/live").send()).statusCode()).isEqualTo(200);

    join(gw.close());
    join(gw.close());
    assertThat(shared.find("kiln.gateway.requests.in.flight").gauge()).isNull();
  }

  @Test
  void aTakenPortFailsStartAndLeavesNothingBound() {
    KilnGateway first = new KilnGateway(loopback().build(), cluster, cluster, DataLocator.NONE);
    join(first.start(vertx));
    KilnGateway second = new KilnGateway(loopback().grpcPort(first.httpPort()).build(), cluster, cluster, DataLocator.NONE);
    assertThat(second.start(vertx).toCompletableFuture())
        .failsWithin(Duration.ofSeconds(30));
    assertThatThrownBy(second::httpPort).isInstanceOf(IllegalStateException.class);
    // The first keeps serving.
    WebClient client = WebClient.create(vertx);
    assertThat(join(client.get(first.httpPort(), "127.0.0.1", "/v2").send()).statusCode()).isEqualTo(200);
    join(first.close());
  }
}
