package io.kiln.deploy.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.deploy.KilnCommands;
import io.kiln.testkit.FreePorts;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two pods of the CPU overlay's StatefulSet, played by two {@code kiln start} processes on this machine: the
 * container's own arguments from {@code deploy/k8s/rendered/cpu.yaml}, expanded as the kubelet expands them
 * (pod IP 127.0.0.1), with the pod's environment ({@code HOSTNAME=kiln-N}, {@code KUBERNETES_SERVICE_HOST}, the
 * Secret's values) and only what one host needs changed: each pod its own cluster port and free HTTP/gRPC/bus
 * ports, discovery {@code k8s-dns:localhost:PORT} (localhost resolves to 127.0.0.1 as the headless Service's name
 * resolves to the pods; both look for members on pod 0's port), the ConfigMap's file with the image's paths made
 * this checkout's. What that shows: the node ids come from the pod names, the two find each other through the
 * Kubernetes DNS discovery, both wait for the minimum cluster size, both apply the same file at start (once
 * stored, twice idempotent), both serve the MLP, the management API wants the Secret's token.
 */
class StatefulSetPodsIT {

  static final Duration START = Duration.ofSeconds(240);
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  final Path home = Path.of("target", "k8s-pods-it", UUID.randomUUID().toString().substring(0, 8)).toAbsolutePath();
  final List<KilnProcess> pods = new ArrayList<>();

  @AfterEach
  void stop() {
    pods.forEach(p -> p.process().destroy());
    pods.forEach(p -> p.stop(Duration.ofSeconds(30)));
  }

  /** The rendered container's arguments for pod {@code ordinal}, with the one-host changes. */
  static List<String> podArgs(ManifestsTest.Rendered r, int ordinal, int ownClusterPort, int firstClusterPort,
                              Path app, String clusterName) {
    Map<String, String> fields = new HashMap<>(ManifestsTest.podFields(r));
    fields.put("status.podIP", "127.0.0.1");
    fields.put("metadata.name", "kiln-" + ordinal);
    Map<String, String> oneHost = Map.of(
        "--discovery", "k8s-dns:localhost:" + firstClusterPort,
        "--cluster-port", Integer.toString(ownClusterPort),
        "--port", "0", "--grpc-port", "0", "--bus-port", "0",
        "--apply", app.toString(),
        "--cluster-name", clusterName);
    List<String> out = new ArrayList<>();
    for (String a : ManifestsTest.expandedArgs(r, fields)) {
      int eq = a.indexOf('=');
      String name = eq < 0 ? a : a.substring(0, eq);
      out.add(oneHost.containsKey(name) ? name + "=" + oneHost.get(name) : a);
    }
    return out;
  }

  KilnProcess startPod(int ordinal, List<String> args) {
    KilnProcess p = KilnCommands.process().jvmFlags("-Dkiln.home=" + home).args(args).name("kiln-" + ordinal)
        .directory(home).log(home.resolve("kiln-" + ordinal + ".out")).withoutEnv("KILN_")
        .env("HOSTNAME", "kiln-" + ordinal).env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .env("KILN_TOKEN", "test-token").env("KILN_CLUSTER_SECRET", "test-cluster-secret").start();
    pods.add(p);
    return p;
  }

  int httpPort(String nodeId) throws IOException {
    return JSON.readTree(home.resolve(".kiln/nodes/" + nodeId + ".json").toFile()).path("httpPort").asInt();
  }

  static HttpResponse<String> http(int port, String path, String body, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(60));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    if (body != null) {
      b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void twoPodsFindEachOtherApplyTheConfigMapAndServe() throws Exception {
    Files.createDirectories(home);
    ManifestsTest.Rendered r = ManifestsTest.rendered("cpu");
    String yaml = r.one(io.fabric8.kubernetes.api.model.ConfigMap.class).getData().get("app.yaml")
        .replace(ManifestsTest.IMAGE_HOME, ManifestsTest.repositoryRoot() + "/");
    Path app = Files.writeString(home.resolve("app.yaml"), yaml);
    String cluster = "pods-" + UUID.randomUUID();
    int[] ports = FreePorts.distinct(2);
    int first = ports[0];
    int second = ports[1];
    List<String> args0 = podArgs(r, 0, first, first, app, cluster);
    assertThat(args0).contains("--min-cluster-size=2", "--gpus=0", "--foreground").doesNotContain("--node-id");

    startPod(0, args0);
    startPod(1, podArgs(r, 1, second, first, app, cluster));

    for (int i = 0; i < 2; i++) {
      pods.get(i).awaitLog("kiln: applied " + app, START);
      assertThat(pods.get(i).log()).contains("kiln: node kiln-" + i + " joined cluster '" + cluster + "'");
    }
    String request = Files.readString(ManifestsTest.repositoryRoot().resolve("deploy/examples/mlp-request.json"));
    for (String node : List.of("kiln-0", "kiln-1")) {
      int port = httpPort(node);
      await().atMost(START).pollInterval(Duration.ofMillis(500))
          .until(() -> http(port, "/v2/health/ready", null, null).statusCode() == 200
              // a node is ready whatever its deployments' state (issue #27): the model's own readiness too
              && http(port, "/v2/models/mlp/ready", null, null).statusCode() == 200);
      HttpResponse<String> infer = http(port, "/v2/models/mlp/infer", request, null);
      assertThat(infer.statusCode()).as(infer.body()).isEqualTo(200);
      JsonNode out = JSON.readTree(infer.body()).path("outputs").get(0);
      assertThat(out.path("shape").toString()).isEqualTo("[2,10]");

      assertThat(http(port, "/api/v1/status", null, null).statusCode()).as("the token is required").isEqualTo(401);
      JsonNode status = JSON.readTree(http(port, "/api/v1/status", null, "test-token").body());
      Map<String, JsonNode> nodes = new HashMap<>();
      status.path("nodes").forEach(n -> nodes.put(n.path("id").asText(), n));
      assertThat(nodes).containsOnlyKeys("kiln-0", "kiln-1");
      assertThat(nodes.get("kiln-1").path("labels").path("k8s_pod").asText()).isEqualTo("kiln-1");
      assertThat(nodes.get("kiln-0").path("labels").path("k8s_node").asText()).isEqualTo("worker-3");
      assertThat(nodes.get("kiln-0").path("total").path("CPU").asDouble()).isEqualTo(2.0);
    }
  }
}
