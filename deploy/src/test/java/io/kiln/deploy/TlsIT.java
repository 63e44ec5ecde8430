package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.gateway.support.CheckFigures;
import io.kiln.runtime.testing.TestCertificates;
import io.kiln.testkit.KilnProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two real {@code kiln start} processes with TLS everywhere a user would turn it on: HTTPS and gRPC-over-TLS
 * gateways ({@code --tls-cert/--tls-key}) and mutual TLS on the event bus between them
 * ({@code --cluster-tls-*}), certificates signed by one test authority. The nodes warm their own serving path
 * over TLS, {@code kiln deploy} and {@code kiln status} reach the local node over HTTPS trusting its own
 * certificate, and a request pinned to the other node crosses the TLS event bus.
 */
class TlsIT {

  @RegisterExtension
  static final CheckFigures FIGURES = new CheckFigures("tls-processes");

  static final Duration START = Duration.ofSeconds(180);
  static final ObjectMapper JSON = new ObjectMapper();
  static CliProcesses cli;
  static TestCertificates ca;
  static int headPort;
  static int n1Port;

  @BeforeAll
  static void startCluster() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "tls-" + UUID.randomUUID().toString().substring(0, 8)));
    ca = TestCertificates.authority(Files.createDirectories(cli.home().resolve("certs")), "kiln-it-ca");
    String name = "tls-" + UUID.randomUUID();
    List<String> common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
        "--cluster-name", name, "--cpus", "2", "--warmup-seconds", "2");
    KilnProcess head = cli.startNode("head", args(List.of("start", "--head", "--foreground", "--node-id", "head"),
        tls("head"), common));
    JsonNode headEntry = awaitEntry("head", head);
    assertThat(headEntry.path("tlsCert").asText()).endsWith("head.crt");
    String join = "127.0.0.1:" + headEntry.path("clusterPort").asInt();
    KilnProcess n1 = cli.startNode("n1", args(List.of("start", "--address", join, "--foreground", "--node-id", "n1"),
        tls("n1"), common));
    n1Port = awaitEntry("n1", n1).path("httpPort").asInt();
    headPort = headEntry.path("httpPort").asInt();
    cli.awaitWarm("head", head, Duration.ofSeconds(90));
    cli.awaitWarm("n1", n1, Duration.ofSeconds(90));
  }

  private static List<String> tls(String node) {
    TestCertificates.Leaf leaf = ca.issue(node);
    return List.of("--tls-cert", leaf.certChain().toString(), "--tls-key", leaf.privateKey().toString(),
        "--cluster-tls-cert", leaf.certChain().toString(), "--cluster-tls-key", leaf.privateKey().toString(),
        "--cluster-tls-ca", ca.caPem().toString());
  }

  @AfterAll
  static void stop() throws Exception {
    if (cli != null) {
      cli.close();
    }
  }

  @Test
  void theCliDeploysOverHttpsAndARequestCrossesTheTlsEventBus() throws Exception {
    Path quickstart = KilnCliTest.repositoryRoot().resolve("deploy/examples/quickstart.yaml");
    CliProcesses.Result deployed = cli.run(Duration.ofSeconds(120), "deploy", quickstart.toString());
    assertThat(deployed.code()).as(deployed.output()).isZero();
    await().atMost(START).until(() -> {
      CliProcesses.Result s = cli.run(Duration.ofSeconds(60), "status", "--json");
      if (s.code() != 0) {
        return false;
      }
      JsonNode status = JSON.readTree(s.output().substring(s.output().indexOf('{')));
      long ready = 0;
      for (JsonNode d : status.path("deployments")) {
        for (JsonNode p : d.path("pools")) {
          ready += p.path("ready").asBoolean() ? 1 : 0;
        }
      }
      return status.path("nodes").size() == 2 && ready == 2;
    });

    // Through n1's gateway, pinned to the head's pool: HTTPS in, TLS event bus across, HTTPS out.
    String body = Files.readString(KilnCliTest.repositoryRoot().resolve("deploy/examples/mlp-request.json"));
    HttpResponse<String> r = https(n1Port, "/v2/models/mlp/infer", body, "head");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(JSON.readTree(r.body()).path("parameters").path("kiln_node").asText()).isEqualTo("head");

    // Each node warmed itself over its own TLS ports without a failure.
    for (int port : new int[] {headPort, n1Port}) {
      String metrics = https(port, "/metrics", null, null).body();
      assertThat(metrics).containsPattern("kiln_warmup_requests_total\\{[^}]*outcome=\"ok\",protocol=\"grpc\"[^}]*} [1-9]");
      assertThat(metrics).doesNotContainPattern("kiln_warmup_requests_total\\{[^}]*outcome=\"failed\"[^}]*} [1-9]");
    }
  }

  @Test
  void plainHttpOnATlsPortGetsNoAnswerAndTheCliSaysWhatToTrust() throws Exception {
    HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + headPort
        + "/v2/health/live")).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString()))
        .isInstanceOf(IOException.class);
    // Named explicitly, the node's address carries no certificate to trust: the CLI says how to give one.
    CliProcesses.Result s = cli.run(Duration.ofSeconds(60), "status", "--address", "https://127.0.0.1:" + headPort);
    assertThat(s.code()).isNotZero();
    assertThat(s.output()).contains("--cacert");
    CliProcesses.Result trusted = cli.run(Duration.ofSeconds(60), "status", "--address",
        "https://127.0.0.1:" + headPort, "--cacert", ca.caPem().toString());
    assertThat(trusted.code()).as(trusted.output()).isZero();
  }

  private static HttpResponse<String> https(int port, String path, String json, String node) throws Exception {
    HttpClient c = HttpClient.newBuilder().sslContext(ca.trustingContext()).version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(60));
    if (node != null) {
      b.header("kiln-node", node);
    }
    if (json != null) {
      b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
    }
    return c.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode awaitEntry(String id, KilnProcess p) {
    return cli.awaitEntry(id, p, START, false);
  }

  @SafeVarargs
  private static String[] args(List<String>... parts) {
    List<String> all = new ArrayList<>();
    for (List<String> p : parts) {
      all.addAll(p);
    }
    return all.toArray(String[]::new);
  }
}
