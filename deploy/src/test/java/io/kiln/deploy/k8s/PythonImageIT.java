package io.kiln.deploy.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.FreePorts;
import io.kiln.testkit.KilnProcess;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code python} image target without a container engine: {@code deploy/k8s/image-rootfs.sh --python} lays the
 * files the Dockerfile copies under a prefix, and the test runs the Dockerfile's own ENTRYPOINT (parsed from it,
 * {@code /opt/kiln} and the image's {@code JAVA_HOME} made the prefix's) with its ENV, a PATH of the prefix's
 * binaries only, and the CPU StatefulSet's container arguments (as the kubelet expands them; one pod, so minimum
 * cluster size 1 and free ports; a warm-up of one second). It applies the Python MLP of deploy/examples/python from
 * the image's path and answers an inference request: python3 with numpy found on the image's PATH, Python workers
 * running.
 */
class PythonImageIT {

  static final Duration START = Duration.ofSeconds(300);
  static final ObjectMapper JSON = new ObjectMapper();

  final Path home = Path.of("target", "python-image-it", UUID.randomUUID().toString().substring(0, 8)).toAbsolutePath();
  KilnProcess pod;

  @AfterEach
  void stop() {
    if (pod != null) {
      pod.stop(Duration.ofSeconds(30));
    }
  }

  static List<String> quoted(String s) {
    return Pattern.compile("\"([^\"]*)\"").matcher(s).results().map(m -> m.group(1)).toList();
  }

  @Test
  void theEntrypointFromTheImagesFilesServesAPythonModel() throws Exception {
    Path prefix = Files.createDirectories(home.resolve("rootfs"));
    String layFiles = ManifestsTest.K8S.resolve("image-rootfs.sh").toString();
    KilnProcess.Result lay = KilnProcess.command(List.of("bash", layFiles, "--python", prefix.toString()))
        .log(home.resolve("rootfs.out")).run(Duration.ofSeconds(120));
    assertThat(lay.code()).as(lay.output()).isZero();

    String dockerfile = Files.readString(ManifestsTest.K8S.resolve("Dockerfile")).replace("\\\n", " ");
    String pythonStage = dockerfile.substring(dockerfile.indexOf("FROM runtime AS python"));
    assertThat(pythonStage).contains("apt-get install -y --no-install-recommends python3 python3-numpy");
    Matcher entry = Pattern.compile("ENTRYPOINT \\[(.*?)]").matcher(dockerfile);
    assertThat(entry.find()).isTrue();
    String opt = prefix.resolve("opt/kiln").toString();
    List<String> cmd = new ArrayList<>(quoted(entry.group(1)).stream().map(a -> a.replace("/opt/kiln", opt)).toList());

    ManifestsTest.Rendered r = ManifestsTest.rendered("cpu");
    Path app = home.resolve("app.yaml");
    Files.writeString(app, Files.readString(ManifestsTest.repositoryRoot().resolve("deploy/examples/python/mlp.yaml"))
        .replaceFirst("uri: \\.", "uri: " + opt + "/deploy/examples/python"));
    int cluster = FreePorts.one();
    for (String a : StatefulSetPodsIT.podArgs(r, 0, cluster, cluster, app, "py-" + UUID.randomUUID())) {
      cmd.add(a.startsWith("--min-cluster-size=") ? "--min-cluster-size=1" : a);
    }
    assertThat(cmd).contains("--foreground", "--apply=" + app).noneMatch(a -> a.startsWith("--warmup-seconds"));
    // Warm-up for one second, not kiln start's 40: warming the Python workers to a flat rate took ~37 s of both cores.
    // The pods' full warm-up runs in StatefulSetPodsIT (NodeWarmupTest and ModelsWarmupTest check it); a second of it
    // still runs it through the image.
    cmd.add("--warmup-seconds=1");

    // The image's ENV lines, paths made the prefix's; PATH only the prefix's binaries (as in the image).
    Matcher envs = Pattern.compile("(DJL_CACHE_DIR|KILN_CACHE_DIR)=(\\S+)|(JAVA_TOOL_OPTIONS)=\"([^\"]*)\"")
        .matcher(dockerfile);
    Map<String, String> imageEnv = new LinkedHashMap<>();
    while (envs.find()) {
      imageEnv.put(envs.group(1) != null ? envs.group(1) : envs.group(3),
          envs.group(1) != null ? prefix + envs.group(2) : envs.group(4));
    }
    assertThat(imageEnv).containsKeys("DJL_CACHE_DIR", "KILN_CACHE_DIR", "JAVA_TOOL_OPTIONS");
    pod = KilnProcess.command(cmd).name("the pod").directory(prefix.resolve("opt/kiln")).log(home.resolve("pod.out"))
        .clearEnv().env(imageEnv)
        .env("PATH", prefix.resolve("opt/java/openjdk/bin") + ":" + prefix.resolve("usr/bin"))
        .env("HOME", prefix.resolve("opt/kiln").toString())
        .env("HOSTNAME", "kiln-0")
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .env("KILN_TOKEN", "test-token")
        .env("KILN_CLUSTER_SECRET", "test-cluster-secret")
        .env("KILN_HEAP_PERCENT", MonitoringObjectsTest.env(r, "KILN_HEAP_PERCENT"))
        .start();

    Path nodeRecord = prefix.resolve("opt/kiln/.kiln/nodes/kiln-0.json");
    pod.awaitTrue("applied its file and recorded itself", START,
        () -> Files.exists(nodeRecord) && pod.log().contains("kiln: applied "));
    int port = JSON.readTree(nodeRecord.toFile()).path("httpPort").asInt();
    pod.awaitHttp(port, "/v2/models/mlp-python/ready", START);
    String request = Files.readString(ManifestsTest.repositoryRoot().resolve("deploy/examples/mlp-request.json"));
    HttpResponse<String> infer = StatefulSetPodsIT.http(port, "/v2/models/mlp-python/infer", request, null);
    assertThat(infer.statusCode()).as(infer.body()).isEqualTo(200);
    JsonNode out = JSON.readTree(infer.body()).path("outputs").get(0);
    assertThat(out.path("shape").toString()).isEqualTo("[2,10]");
    assertThat(out.path("data")).hasSize(20);
  }
}
