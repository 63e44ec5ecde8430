package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.testsupport.EchoEngineJar;
import io.kiln.testkit.KilnProcess;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A third-party engine as docs/engines.md describes it: a jar (the Echo engine, {@link EchoEngineJar}, compiled from
 * source here) put on the class path of a real {@code kiln up} node, beside Kiln's own engine jars. The node finds it
 * through {@code ServiceLoader}, detects it from the model folder, serves a deployment on it, and its gateway
 * answers OIP requests with what the engine computed (each input times two).
 */
class ThirdPartyEngineNodeTest {

  private static final Duration START = Duration.ofSeconds(180);
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path dir;

  @Test
  void aKilnUpNodeServesADeploymentOnAnEngineJarOnItsClassPath() throws Exception {
    Path jar = EchoEngineJar.build(dir.resolve("engine"), "com.example.echo.EchoEngine");
    Path model = Files.createDirectories(dir.resolve("echo-model"));
    Files.writeString(model.resolve(EchoEngineJar.MODEL_FILE), ""); // no engine: in the spec, the folder shows it
    Path yaml = Files.writeString(dir.resolve("echo.yaml"), """
        deployments:
          - name: echo
            version: "1"
            model:
              uri: %s
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 1}}
        """.formatted(model));
    Path home = Files.createDirectories(dir.resolve("home"));

    List<String> command = new ArrayList<>(List.of(KilnProcess.javaBinary()));
    command.addAll(KilnProcess.JVM_FLAGS);
    command.addAll(List.of("-Dkiln.home=" + home, "-cp", KilnProcess.testClasspath() + File.pathSeparator + jar,
        KilnCli.class.getName(), "up", "--file", yaml.toString(), "--node-id", "solo", "--host", "127.0.0.1",
        "--cpus", "2", "--gpus", "0", "--port", "0", "--grpc-port", "0", "--warmup-seconds", "0"));
    try (KilnProcess node = KilnProcess.command(command).name("echo-node").directory(home)
        .log(dir.resolve("node.out")).start()) {
      JsonNode entry = node.await("node solo's record", START, () -> entry(home.resolve(".kiln/nodes/solo.json")));
      int port = entry.path("httpPort").asInt();
      assertThat(node.log()).contains("kiln: deployment echo version 1 is ready");

      JsonNode meta = JSON.readTree(get(port, "/v2/models/echo").body());
      assertThat(meta.path("platform").asText()).as(meta.toString()).isEqualTo("echo");

      HttpResponse<String> r = post(port, "/v2/models/echo/infer",
          "{\"id\":\"e1\",\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,2],\"data\":[1.5,-2,0.25,4]}]}");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      JsonNode out = JSON.readTree(r.body()).path("outputs").path(0);
      assertThat(out.path("name").asText()).isEqualTo("y");
      assertThat(out.path("shape").toString()).isEqualTo("[2,2]");
      assertThat(out.path("data").toString()).isEqualTo("[3.0,-4.0,0.5,8.0]");
    }
  }

  private static Optional<JsonNode> entry(Path file) throws Exception {
    return Files.isRegularFile(file) ? Optional.of(JSON.readTree(file.toFile())) : Optional.empty();
  }

  private static HttpResponse<String> get(int port, String path) throws Exception {
    return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> post(int port, String path, String json) throws Exception {
    return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
