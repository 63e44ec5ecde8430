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
 * The {@code kiln} launcher script's start-up cache (docs/cold-start.md), end to end with real processes: it trains
 * the cache with the built distribution ({@code deploy/target/kiln.jar}, which the package phase made), a node it
 * starts with {@code KILN_AOT=on} (the JVM refuses to start unless it maps the cache) serves the quickstart model,
 * and a cache older than the jar is rebuilt before it is used. Each JDK's cache lives in the test's own folder
 * ({@code KILN_CACHE_DIR}); the training does not warm up ({@code --warmup-seconds 0}: the cache holds what the start
 * and the model's load use), to keep the test short: each test trains twice, and a warm-up of even one second made each
 * training ~3 s longer (JDK 25, load 4-6).
 */
class LauncherCacheIT {

  private static final Path JDK25 = Path.of(System.getProperty("kiln.test.jdk25",
      "/usr/lib/jvm/temurin-25-jdk-amd64"));

  @TempDir
  Path dir;

  @Test
  void appCdsArchiveOnTheBuildJdkIsBuiltUsedAndRebuiltWhenTheJarChanged() throws Exception {
    Path javaHome = Path.of(System.getProperty("java.home"));
    int feature = Runtime.version().feature();
    // The build JDK (17+) gets the AppCDS archive below 25 and the AOT cache from 25 on; both are this test's subject.
    checkCache(javaHome, "kiln-jdk" + feature + (feature >= 25 ? ".aot" : ".jsa"));
  }

  @Test
  void aotCacheOnJdk25IsBuiltUsedAndRebuilt_skippedWhereNoJdk25IsInstalled() throws Exception {
    assumeTrue(Files.isExecutable(JDK25.resolve("bin/java")) && releaseFeature(JDK25) >= 25,
        "no JDK 25+ at " + JDK25 + " (-Dkiln.test.jdk25=...): the AOT cache (JEP 483/514/515) needs one");
    checkCache(JDK25, "kiln-jdk" + releaseFeature(JDK25) + ".aot");
  }

  private void checkCache(Path javaHome, String cacheName) throws Exception {
    Path root = KilnCliTest.repositoryRoot();
    Path jar = root.resolve("deploy/target/kiln.jar");
    assumeTrue(Files.isRegularFile(jar), "no " + jar + ": run in the integration-test phase (after package)");
    Path cacheDir = Files.createDirectories(dir.resolve("cache"));
    Map<String, String> env = Map.of("JAVA_HOME", javaHome.toString(), "KILN_CACHE_DIR", cacheDir.toString(),
        "KILN_AOT_TRAIN_ARGS", "--warmup-seconds 0", "KILN_AOT", "on");

    String trained = runToEnd(root, env, dir.resolve("train.out"), "train-aot");
    Path cache = cacheDir.resolve(cacheName);
    assertThat(trained).contains("kiln: building the start-up cache").contains("start-up cache ready: " + cache);
    assertThat(cache).isNotEmptyFile();

    // The jar changed after the cache was made (as a rebuild leaves it): `kiln up` must train anew, then use it.
    FileTime stale = FileTime.fromMillis(Files.getLastModifiedTime(jar).toMillis() - 3_600_000);
    Files.setLastModifiedTime(cache, stale);
    int[] ports = FreePorts.distinct(2);
    int port = ports[0];
    Path out = dir.resolve("up.out");
    KilnProcess node = launcher(root, env, out, "up", "--host", "127.0.0.1", "--port", String.valueOf(port),
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
      assertThat(read(out)).contains("kiln: building the start-up cache").contains("start-up cache ready: " + cache);
      assertThat(Files.getLastModifiedTime(cache).toMillis()).isGreaterThan(stale.toMillis() + 1_800_000);
      // The JVM itself says nothing: no unified-logging warning (JDK 25's AOT code cache), no JNA/Unsafe notice (24+).
      assertThat(read(out).lines().filter(l -> l.contains("[warning]") || l.startsWith("WARNING: ")))
          .as("JVM warnings in %s", out).isEmpty();
      // KILN_AOT=on passes -Xshare:on / -XX:AOTMode=on: this JVM is serving because it mapped the rebuilt cache.
      assertThat(node.process().info().arguments().map(List::of).orElse(List.of()))
          .anySatisfy(a -> assertThat(a).contains(cache.toString()));
    } finally {
      node.stop(Duration.ofSeconds(60));
    }
  }

  private static KilnProcess.Builder launcher(Path root, Map<String, String> env, Path out, String... args) {
    return KilnProcess.command(List.of(root.resolve("kiln").toString())).args(args).name("kiln " + args[0])
        .directory(root).log(out).withoutEnv("KILN_JAVA_OPTS").env(env);
  }

  private static String runToEnd(Path root, Map<String, String> env, Path out, String... args) throws Exception {
    KilnProcess.Result r = launcher(root, env, out, args).run(Duration.ofMinutes(8));
    assertThat(r.code()).as("kiln %s; output: %s", String.join(" ", args), r.output()).isZero();
    return r.output();
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
