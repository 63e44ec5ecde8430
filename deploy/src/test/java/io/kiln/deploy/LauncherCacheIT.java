package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kiln.testkit.FreePorts;
import io.kiln.testkit.KilnProcess;
import io.kiln.testkit.OipRequest;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code kiln} launcher script's start-up cache (docs/cold-start.md), end to end with real processes, one
 * training per JDK: on the build JDK a stale cache (older than the built distribution, {@code deploy/target/kiln.jar},
 * which the package phase made) is rebuilt by {@code kiln up} with {@code KILN_AOT=on} (the JVM refuses to start
 * unless it maps the cache), which then serves the quickstart model from it; on JDK 25 {@code kiln train-aot} builds
 * the cache and {@code kiln up} uses it as it is, without training again. Each JDK's cache lives in the test's own
 * folder ({@code KILN_CACHE_DIR}); the training does not warm up ({@code --warmup-seconds 0}: the cache holds what the
 * start and the model's load use), to keep the test short: a warm-up of even one second made each training ~3 s
 * longer (JDK 25, load 4-6).
 */
class LauncherCacheIT {

  private static final Path JDK25 = Path.of(System.getProperty("kiln.test.jdk25",
      "/usr/lib/jvm/temurin-25-jdk-amd64"));

  @TempDir
  Path dir;

  @Test
  void appCdsArchiveOnTheBuildJdkIsRebuiltWhenStaleThenUsed() throws Exception {
    Path javaHome = Path.of(System.getProperty("java.home"));
    int feature = Runtime.version().feature();
    // The build JDK (17+) gets the AppCDS archive below 25 and the AOT cache from 25 on; both are this test's subject.
    String cacheName = "kiln-jdk" + feature + (feature >= 25 ? ".aot" : ".jsa");
    Map<String, String> env = env(javaHome);
    Path cache = Path.of(env.get("KILN_CACHE_DIR")).resolve(cacheName);
    // A cache older than the jar (as a rebuild leaves it): `kiln up` must train anew, then use it.
    Files.writeString(cache, "a cache of an older build");
    FileTime stale = FileTime.fromMillis(Files.getLastModifiedTime(jar()).toMillis() - 3_600_000);
    Files.setLastModifiedTime(cache, stale);
    String out = serveFromCache(env, cache, "up-stale.out");
    assertThat(out).contains("kiln: building the start-up cache").contains("start-up cache ready: " + cache);
    assertThat(Files.getLastModifiedTime(cache).toMillis()).isGreaterThan(stale.toMillis() + 1_800_000);
  }

  @Test
  void aotCacheOnJdk25IsBuiltByTrainAotThenUsedAsItIs_skippedWhereNoJdk25IsInstalled() throws Exception {
    assumeTrue(Files.isExecutable(JDK25.resolve("bin/java")) && releaseFeature(JDK25) >= 25,
        "no JDK 25+ at " + JDK25 + " (-Dkiln.test.jdk25=...): the AOT cache (JEP 483/514/515) needs one");
    Map<String, String> env = env(JDK25);
    Path cache = Path.of(env.get("KILN_CACHE_DIR")).resolve("kiln-jdk" + releaseFeature(JDK25) + ".aot");
    KilnProcess.Result trained = launcher(env, dir.resolve("train.out"), "train-aot").run(Duration.ofMinutes(8));
    assertThat(trained.code()).as("kiln train-aot; output: %s", trained.output()).isZero();
    assertThat(trained.output()).contains("kiln: building the start-up cache")
        .contains("start-up cache ready: " + cache);
    assertThat(cache).isNotEmptyFile();
    FileTime made = Files.getLastModifiedTime(cache);
    assertThat(serveFromCache(env, cache, "up.out")).doesNotContain("building the start-up cache");
    assertThat(Files.getLastModifiedTime(cache)).isEqualTo(made);
  }

  private Path jar() {
    Path jar = KilnCliTest.repositoryRoot().resolve("deploy/target/kiln.jar");
    assumeTrue(Files.isRegularFile(jar), "no " + jar + ": run in the integration-test phase (after package)");
    return jar;
  }

  private Map<String, String> env(Path javaHome) throws IOException {
    jar();
    Path cacheDir = Files.createDirectories(dir.resolve("cache"));
    return Map.of("JAVA_HOME", javaHome.toString(), "KILN_CACHE_DIR", cacheDir.toString(),
        "KILN_AOT_TRAIN_ARGS", "--warmup-seconds 0", "KILN_AOT", "on");
  }

  /**
   * {@code kiln up} with {@code env} until it serves the quickstart model; checks that its JVM mapped {@code cache}
   * and warned of nothing, and returns the launcher's and the node's output.
   */
  private String serveFromCache(Map<String, String> env, Path cache, String log) throws Exception {
    int[] ports = FreePorts.distinct(2);
    int port = ports[0];
    Path out = dir.resolve(log);
    KilnProcess node = launcher(env, out, "up", "--host", "127.0.0.1", "--port", String.valueOf(port),
        "--grpc-port", String.valueOf(ports[1]), "--warmup-seconds", "0").start();
    try {
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      float[] half = new float[64];
      java.util.Arrays.fill(half, 0.5f);
      String body = OipRequest.fp32("input", new long[] {1, 64}, half).json();
      HttpRequest infer = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/models/mlp/infer"))
          .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
      node.awaitTrue("serving the quickstart", Duration.ofMinutes(6),
          () -> http.send(infer, HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
      // The JVM itself says nothing: no unified-logging warning (JDK 25's AOT code cache), no JNA/Unsafe notice (24+).
      assertThat(read(out).lines().filter(l -> l.contains("[warning]") || l.startsWith("WARNING: ")))
          .as("JVM warnings in %s", out).isEmpty();
      // KILN_AOT=on passes -Xshare:on / -XX:AOTMode=on: this JVM is serving because it mapped the cache.
      assertThat(node.process().info().arguments().map(List::of).orElse(List.of()))
          .anySatisfy(a -> assertThat(a).contains(cache.toString()));
      return read(out);
    } finally {
      node.stop(Duration.ofSeconds(60));
    }
  }

  private static KilnProcess.Builder launcher(Map<String, String> env, Path out, String... args) {
    Path root = KilnCliTest.repositoryRoot();
    return KilnProcess.command(List.of(root.resolve("kiln").toString())).args(args).name("kiln " + args[0])
        .directory(root).log(out).withoutEnv("KILN_JAVA_OPTS").env(env);
  }

  private static String read(Path file) throws IOException {
    return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
  }

  private static int releaseFeature(Path javaHome) throws IOException {
    Path release = javaHome.resolve("release");
    if (!Files.isRegularFile(release)) {
      return 0;
    }
    return Files.readAllLines(release).stream().filter(l -> l.startsWith("JAVA_VERSION=\""))
        .map(l -> l.substring("JAVA_VERSION=\"".length()).split("[.\"]")[0]).mapToInt(Integer::parseInt)
        .findFirst().orElse(0);
  }
}
