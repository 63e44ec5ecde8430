package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.kiln.pools.impl.ModelCache;
import io.kiln.pools.testsupport.ProjectModels;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.SelfSignedCertificate;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Remote model URIs against a real HTTPS server (Vert.x, a self-signed certificate trusted through a PEM CA file)
 * serving the repository's ONNX MLP, as a file and as archives.
 */
@Tag("slow")
class RemoteModelUriTest {

  private static Vertx vertx;
  private static SelfSignedCertificate cert;
  private static String base;
  private static final Map<String, byte[]> FILES = new ConcurrentHashMap<>();
  private static final Map<String, AtomicInteger> REQUESTS = new ConcurrentHashMap<>();
  @TempDir
  static Path work;

  @BeforeAll
  static void serve() throws Exception {
    vertx = Vertx.vertx();
    cert = SelfSignedCertificate.create("localhost");
    HttpServer server = vertx.createHttpServer(new HttpServerOptions().setSsl(true).setHost("127.0.0.1")
        .setKeyCertOptions(cert.keyCertOptions()));
    server.requestHandler(req -> {
      REQUESTS.computeIfAbsent(req.path(), k -> new AtomicInteger()).incrementAndGet();
      byte[] body = FILES.get(req.path());
      if (req.path().equals("/models/stalls.onnx")) { // headers and a first part, then nothing
        req.response().putHeader("content-length", "1000000").write(io.vertx.core.buffer.Buffer.buffer(new byte[1000]));
      } else if (req.path().equals("/models/silent.onnx")) { // not even the headers
        return;
      } else if (body == null) {
        req.response().setStatusCode(404).end();
      } else {
        req.response().end(io.vertx.core.buffer.Buffer.buffer(body));
      }
    });
    int port = server.listen(0).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS).actualPort();
    // localhost: the certificate names it (the JDK checks the host name against it)
    base = "https://localhost:" + port;
    byte[] onnx = Files.readAllBytes(ProjectModels.modelsDir().resolve("mlp-onnx").resolve("model.onnx"));
    FILES.put("/models/mlp-onnx/model.onnx", onnx);
    FILES.put("/models/mlp-onnx.zip", zip(Map.of("mlp-onnx/model.onnx", onnx)));
    FILES.put("/models/evil.zip", zip(Map.of("model.onnx", onnx, "../escaped.txt", "x".getBytes())));
    FILES.put("/models/mlp-onnx.tar.gz", tarGz(Map.of("mlp-onnx/model.onnx", onnx)));
    FILES.put("/models/evil.tgz", tarGz(Map.of("model.onnx", onnx, "../../escaped.txt", "x".getBytes())));
  }

  @AfterAll
  static void stop() throws Exception {
    System.clearProperty("kiln.model.cache");
    System.clearProperty("kiln.model.ca");
    vertx.close().toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    cert.delete();
  }

  private static ModelCache cache(String name) {
    return new ModelCache(new ModelCache.Options(work.resolve(name), Path.of(cert.certificatePath()), 1L << 30));
  }

  @Test
  void anHttpsOnnxFileLoadsAndInfersThroughModelRunnersAndASecondLoadHitsTheCache() throws Exception {
    Path dir = work.resolve("node-cache");
    System.setProperty("kiln.model.cache", dir.toString());
    System.setProperty("kiln.model.ca", cert.certificatePath());
    String path = "/models/node/model.onnx";
    FILES.put(path, FILES.get("/models/mlp-onnx/model.onnx"));
    ModelSpec spec = ProjectModels.mlpOnnx().uri(base + path).sha256(sha256(FILES.get(path))).build();
    assertThat(spec.remoteUri()).contains(URI.create(base + path));

    for (int i = 0; i < 2; i++) {
      try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
        List<Tensor> out = runner.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp-onnx")))).get(0);
        assertThat(out.get(0).shape()).containsExactly(2, 10);
        float[] expected = ProjectModels.expectedOutput("mlp-onnx").asFloats();
        float[] got = out.get(0).asFloats();
        for (int j = 0; j < expected.length; j++) {
          assertThat(got[j]).isCloseTo(expected[j], within(1e-4f));
        }
        assertThat(runner.spec().uri()).startsWith(dir);
      }
    }
    assertThat(REQUESTS.get(path)).hasValue(1);
    try (var s = Files.list(dir)) {
      assertThat(s.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith(".tmp"));
    }
  }

  @Test
  void aWrongSha256FailsTheLoadNamingBothDigestsAndCachesNothing() throws Exception {
    String path = "/models/mlp-onnx/model.onnx";
    String wrong = "0".repeat(64);
    ModelCache cache = cache("mismatch");
    assertThatThrownBy(() -> cache.fetch(URI.create(base + path), wrong))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("sha256 mismatch")
        .hasMessageContaining("expected " + wrong)
        .hasMessageContaining("got " + sha256(FILES.get(path)));
    try (var s = Files.list(work.resolve("mismatch"))) {
      assertThat(s.toList()).isEmpty();
    }
  }

  @Test
  void zipAndTarGzArchivesUnpackIntoAModelFolder() throws Exception {
    ModelCache cache = cache("archives");
    for (String path : List.of("/models/mlp-onnx.zip", "/models/mlp-onnx.tar.gz")) {
      Path folder = cache.fetch(URI.create(base + path), sha256(FILES.get(path)));
      // the archives hold one top-level folder: that folder is the model
      assertThat(folder.getFileName().toString()).isEqualTo("mlp-onnx");
      assertThat(folder.resolve("model.onnx")).hasBinaryContent(FILES.get("/models/mlp-onnx/model.onnx"));
      try (ModelRunner r = ModelRunners.load(ProjectModels.mlpOnnx().uri(folder).build(), List.of())) {
        assertThat(r.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp-onnx")))).get(0).get(0)
            .shape()).containsExactly(2, 10);
      }
    }
  }

  @Test
  void archiveEntriesEscapingTheFolderAreRefused() throws Exception {
    ModelCache cache = cache("evil");
    for (String path : List.of("/models/evil.zip", "/models/evil.tgz")) {
      assertThatThrownBy(() -> cache.fetch(URI.create(base + path), sha256(FILES.get(path))))
          .isInstanceOf(ModelLoadException.class)
          .hasMessageContaining("escapes the model folder");
    }
    assertThat(work.resolve("escaped.txt")).doesNotExist();
    assertThat(work.getParent().resolve("escaped.txt")).doesNotExist();
    try (var s = Files.list(work.resolve("evil"))) {
      assertThat(s.toList()).isEmpty();
    }
  }

  @Test
  void concurrentLoadsOfOneUriShareOneDownload() throws Exception {
    String path = "/models/mlp-onnx.zip";
    FILES.put("/models/shared/mlp-onnx.zip", FILES.get(path));
    ModelCache cache = cache("shared");
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Path>> all = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        all.add(pool.submit(() -> cache.fetch(URI.create(base + "/models/shared/mlp-onnx.zip"),
            sha256(FILES.get(path)))));
      }
      Path first = all.get(0).get(60, TimeUnit.SECONDS);
      for (Future<Path> f : all) {
        assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(first);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(REQUESTS.get("/models/shared/mlp-onnx.zip")).hasValue(1);
  }

  @Test
  void aServerThatGoesQuietFailsTheDownloadAfterTheReadTimeoutAndCachesNothing() {
    ModelCache cache = new ModelCache(new ModelCache.Options(work.resolve("stalls"), Path.of(cert.certificatePath()),
        1L << 30).withReadTimeout(java.time.Duration.ofMillis(500)));
    long start = System.nanoTime();
    assertThatThrownBy(() -> cache.fetch(URI.create(base + "/models/stalls.onnx"), "0".repeat(64)))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("no data for 500 ms")
        .hasMessageContaining("after 1000 bytes");
    assertThatThrownBy(() -> cache.fetch(URI.create(base + "/models/silent.onnx"), "0".repeat(64)))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("no answer within the read timeout (500 ms");
    // both within a few timeouts, not the 30-minute load timeout they would have waited for
    assertThat(java.time.Duration.ofNanos(System.nanoTime() - start)).isLessThan(java.time.Duration.ofSeconds(30));
    assertThat(work.resolve("stalls").toFile().list()).isNullOrEmpty();
    // a later fetch tries again (nothing was left in flight): it fails the same way, it does not hang
    assertThatThrownBy(() -> cache.fetch(URI.create(base + "/models/stalls.onnx"), "0".repeat(64)))
        .hasMessageContaining("no data for 500 ms");
  }

  @Test
  void aServerErrorNamesTheStatusAndAnUntrustedServerFails() {
    ModelCache cache = cache("errors");
    assertThatThrownBy(() -> cache.fetch(URI.create(base + "/models/missing.onnx"), "0".repeat(64)))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("HTTP 404");
    ModelCache jvmTrust = new ModelCache(new ModelCache.Options(work.resolve("untrusted"), null, 1L << 30));
    assertThatThrownBy(() -> jvmTrust.fetch(URI.create(base + "/models/mlp-onnx/model.onnx"), "0".repeat(64)))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("download failed");
    assertThat(REQUESTS.get("/models/missing.onnx")).hasValue(1);
  }

  @Test
  void specsValidateSchemesHostsAndDigests() {
    String sha = "a".repeat(64);
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().uri("ftp://host/model.onnx").build())
        .hasMessageContaining("uri unsupported uri scheme 'ftp'").hasMessageContaining("https://, http://, s3://");
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().uri("http://example.com/model.onnx").sha256(sha).build())
        .hasMessageContaining("only to a loopback host");
    assertThat(ProjectModels.mlpOnnx().uri("http://127.0.0.1:9/model.onnx").sha256(sha).build().remoteUri())
        .contains(URI.create("http://127.0.0.1:9/model.onnx"));
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().uri("https://example.com/model.onnx").build())
        .hasMessageContaining("sha256 required for an https uri");
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().uri("https://example.com/model.onnx").sha256("abc").build())
        .hasMessageContaining("64 lower-case hex digits");
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().sha256(sha).build())
        .hasMessageContaining("sha256 only for remote uris");
  }

  static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  private static byte[] zip(Map<String, byte[]> entries) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(out)) {
      for (var e : entries.entrySet()) {
        zip.putNextEntry(new ZipEntry(e.getKey()));
        zip.write(e.getValue());
        zip.closeEntry();
      }
    }
    return out.toByteArray();
  }

  /** A .tar.gz made by Python's tarfile (a real tar writer, not ours), names kept as given. */
  private static byte[] tarGz(Map<String, byte[]> entries) throws Exception {
    Path dir = Files.createTempDirectory(work, "tar");
    StringBuilder script = new StringBuilder("import tarfile, sys\nt = tarfile.open(sys.argv[1], 'w:gz')\n");
    int i = 0;
    for (var e : entries.entrySet()) {
      Path f = dir.resolve("f" + i++);
      Files.write(f, e.getValue());
      script.append("t.add(").append(pyString(f.toString())).append(", arcname=").append(pyString(e.getKey()))
          .append(")\n");
    }
    script.append("t.close()\n");
    Path out = dir.resolve("out.tgz");
    Process p = new ProcessBuilder("/usr/bin/python3", "-c", script.toString(), out.toString())
        .redirectErrorStream(true).start();
    String log = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor()).as(log).isZero();
    return Files.readAllBytes(out);
  }

  private static String pyString(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
