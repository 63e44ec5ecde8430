package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.CheckFigures;
import io.kiln.gateway.support.Curl;
import io.kiln.gateway.support.FakeCluster;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.RawHttp;
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
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS on both servers with real certificates (made by keytool, signed by a test authority): HTTPS answers a
 * client that trusts the authority, gRPC speaks h2 over TLS (ALPN), plain text is refused, and a certificate
 * replaced on disk is served to new connections without a restart — while a half-written file never is. Over TLS
 * too, {@code Expect: 100-continue} is answered before the body and a declared body over the limit refused unsent.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
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

  @Test
  void overTlsAnExpectedBodyIsInvitedWith100ContinueAndOneOverTheLimitIsRefusedUnsent() throws Exception {
    ExpectContinueTest.Binary b = ExpectContinueTest.inferBody(ExpectContinueTest.BIG);
    try (RawHttp c = RawHttp.connectTls(GatewayTestBase.HOST, gateway.httpPort(), ca.trustingContext())) {
      c.send(RawHttp.head("POST", ExpectContinueTest.INFER, "Content-Type: application/octet-stream",
          ExpectContinueTest.EXPECT, "Inference-Header-Content-Length: " + b.headerLength(),
          "Content-Length: " + b.body().length));
      assertThat(c.read().statusLine()).isEqualTo("HTTP/1.1 100 Continue");
      c.send(b.body());
      assertThat(c.read().status()).isEqualTo(200);

      byte[] generate = ExpectContinueTest.GENERATE_JSON.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      c.send(RawHttp.head("POST", ExpectContinueTest.GENERATE, "Content-Type: application/json",
          ExpectContinueTest.EXPECT, "Content-Length: " + generate.length));
      assertThat(c.read().statusLine()).isEqualTo("HTTP/1.1 100 Continue");
      c.send(generate);
      assertThat(c.read().status()).isEqualTo(200);

      c.send(RawHttp.head("POST", ExpectContinueTest.INFER, "Content-Type: application/json",
          ExpectContinueTest.EXPECT, "Content-Length: " + (GatewayOptions.DEFAULT_MAX_BODY_BYTES + 1)));
      RawHttp.Answer refused = c.read();
      assertThat(refused.status()).isEqualTo(413);
      assertThat(new io.vertx.core.json.JsonObject(refused.body()).getString("error"))
          .isEqualTo("request body exceeds the limit of " + GatewayOptions.DEFAULT_MAX_BODY_BYTES + " bytes");
      assertThat(refused.header("Connection")).isEqualToIgnoringCase("close");
      assertThat(c.closedByServer()).isTrue();
    }
  }

  @Test
  void curlOverHttpsPostsABodyOver1MbWithoutWaitingForContinue() throws Exception {
    Path curl = Curl.find();
    assumeTrue(curl != null,
        "curl is not installed (run-tests does not install it): the raw TLS check above covers this");
    ExpectContinueTest.Binary b = ExpectContinueTest.inferBody(ExpectContinueTest.BIG);
    Path body = Files.write(dir.resolve("infer.bin"), b.body());
    String url = "https://127.0.0.1:" + gateway.httpPort() + ExpectContinueTest.INFER;
    String[] args = {"--cacert", ca.caPem().toString(), "-H", "Content-Type: application/octet-stream",
        "-H", "Inference-Header-Content-Length: " + b.headerLength()};
    Curl.post(curl, url, body, dir, args); // warms the path
    Curl.Result r = Curl.post(curl, url, body, dir, args);
    FIGURES.put("curlHttpsExpectContinueSeconds", r.timeTotal());
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.sizeUpload()).isGreaterThanOrEqualTo(ExpectContinueTest.BIG);
    assertThat(r.timeTotal()).isLessThan(ExpectContinueCurlTest.WELL_UNDER_CURLS_WAIT_SECONDS);
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
