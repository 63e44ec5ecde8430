package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.CheckFigures;
import io.kiln.gateway.support.FakeCluster;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelReadyRequest;
import io.kiln.protocol.grpc.ServerLiveRequest;
import io.kiln.runtime.testing.TestCertificates;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS on both servers with real certificates (made by keytool, signed by a test authority): HTTPS answers a
 * client that trusts the authority, gRPC speaks h2 over TLS (ALPN), plain text is refused, and a certificate
 * replaced on disk is served to new connections without a restart — while a half-written file never is.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayTlsTest {

  @RegisterExtension
  static final CheckFigures FIGURES = new CheckFigures("tls-gateway");

  @TempDir
  static Path dir;
  private TestCertificates ca;
  private TestCertificates.Leaf first;
  private TestCertificates.Leaf second;
  private Path served;
  private Path servedKey;
  private Vertx vertx;
  private KilnGateway gateway;

  @BeforeAll
  void start() throws IOException {
    ca = TestCertificates.authority(dir, "kiln-test-ca");
    first = ca.issue("first");
    second = ca.issue("second");
    served = dir.resolve("tls.crt");
    servedKey = dir.resolve("tls.key");
    Files.copy(first.certChain(), served);
    Files.copy(first.privateKey(), servedKey);
    vertx = Vertx.vertx();
    FakeCluster cluster = new FakeCluster(TestModels.all());
    cluster.addNode("node-a", true);
    GatewayOptions options = GatewayOptions.builder().host(GatewayTestBase.HOST).httpPort(0).grpcPort(0)
        .bindJvmMetrics(false).tls(new TlsFiles(served, servedKey, Duration.ofMillis(100))).build();
    gateway = new KilnGateway(options, cluster, cluster, cluster);
    GatewayTestBase.join(gateway.start(vertx));
  }

  @AfterAll
  void stop() {
    if (vertx != null) {
      GatewayTestBase.join(gateway.close());
      GatewayTestBase.join(vertx.close());
    }
  }

  @Test
  void httpsAnswersAClientThatTrustsTheAuthority() throws Exception {
    HttpResponse<String> live = https("/v2/health/live");
    assertThat(live.statusCode()).isEqualTo(200);
    assertThat(live.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
  }

  @Test
  void plainTextOnTheTlsPortGetsNoAnswer() {
    HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + "/v2/health/live"))
        .timeout(Duration.ofSeconds(20)).build();
    assertThatThrownBy(() -> plain.send(r, HttpResponse.BodyHandlers.ofString())).isInstanceOf(IOException.class);
  }

  @Test
  void aClientThatDoesNotTrustTheAuthorityIsRefused() throws Exception {
    TestCertificates other = TestCertificates.authority(Files.createDirectories(dir.resolve("other")), "other-ca");
    HttpClient stranger = HttpClient.newBuilder().sslContext(other.trustingContext()).build();
    HttpRequest r = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + gateway.httpPort() + "/v2/health/live"))
        .timeout(Duration.ofSeconds(20)).build();
    assertThatThrownBy(() -> stranger.send(r, HttpResponse.BodyHandlers.ofString()))
        .isInstanceOf(javax.net.ssl.SSLHandshakeException.class);
  }

  @Test
  void grpcSpeaksH2OverTls() {
    grpcLiveAndReady();
  }

  private void grpcLiveAndReady() {
    GrpcClient client = GrpcClient.client(vertx, new HttpClientOptions().setSsl(true).setUseAlpn(true)
        .setProtocolVersion(HttpVersion.HTTP_2).setTrustOptions(new PemTrustOptions().addCertPath(ca.caPem().toString())));
    try {
      GRPCInferenceServiceGrpcClient grpc = GRPCInferenceServiceGrpcClient.create(client,
          SocketAddress.inetSocketAddress(gateway.grpcPort(), GatewayTestBase.HOST));
      assertThat(GatewayTestBase.join(grpc.serverLive(ServerLiveRequest.getDefaultInstance())).getLive()).isTrue();
      assertThat(GatewayTestBase.join(grpc.modelReady(ModelReadyRequest.newBuilder().setName("mlp").build())).getReady())
          .isTrue();
    } finally {
      GatewayTestBase.join(client.close());
    }
  }

  @Test
  void aCertificateReplacedOnDiskIsServedWithoutARestartAndAHalfWrittenOneNever() throws Exception {
    long before = gateway.tlsReloads();
    long refusedBefore = gateway.tlsRefusals();
    assertThat(servedCertificate()).isEqualTo(first.certificate());

    // A half-written key (what a non-atomic copy leaves for a moment) must not replace the working one.
    Files.writeString(servedKey, "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
    Files.copy(second.certChain(), served, StandardCopyOption.REPLACE_EXISTING);
    await().atMost(Duration.ofSeconds(30)).until(() -> gateway.tlsRefusals() > refusedBefore);
    assertThat(gateway.tlsReloads()).isEqualTo(before);
    assertThat(servedCertificate()).isEqualTo(first.certificate());
    assertThat(https("/v2/health/live").statusCode()).isEqualTo(200);

    Files.copy(second.privateKey(), servedKey, StandardCopyOption.REPLACE_EXISTING);
    long replacedAt = System.nanoTime();
    await().atMost(Duration.ofSeconds(30)).until(() -> gateway.tlsReloads() > before);
    await().atMost(Duration.ofSeconds(30)).until(() -> servedCertificate().equals(second.certificate()));
    FIGURES.put("newCertificateServedMs", (System.nanoTime() - replacedAt) / 1_000_000);
    FIGURES.put("halfWrittenRefusals", gateway.tlsRefusals() - refusedBefore);
    assertThat(https("/v2/health/live").statusCode()).isEqualTo(200);
    grpcLiveAndReady(); // the gRPC server still negotiates h2 with the new certificate
  }

  /** A fresh client each time: a new connection, so a new handshake. */
  private HttpResponse<String> https(String path) throws Exception {
    HttpClient c = HttpClient.newBuilder().sslContext(ca.trustingContext()).version(HttpClient.Version.HTTP_1_1).build();
    return c.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + gateway.httpPort() + path))
        .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private X509Certificate servedCertificate() throws Exception {
    HttpResponse<String> r = https("/v2/health/live");
    return (X509Certificate) r.sslSession().orElseThrow().getPeerCertificates()[0];
  }
}
