package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.impl.ModelCache;
import io.kiln.pools.impl.S3Source;
import io.kiln.pools.testsupport.ProjectModels;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.BlobStoreContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code s3://} model uris against S3Proxy (a real S3-compatible server, in-process, over jclouds' transient blob
 * store) checking AWS Signature V4: an object is a one-file model, a prefix a folder, wrong keys fail naming the
 * status.
 */
@Tag("slow")
class S3ModelUriTest {

  private static final String ACCESS = "kiln-access";
  private static final String SECRET = "kiln-secret-key";
  private static BlobStoreContext context;
  private static S3Proxy proxy;
  private static URI endpoint;
  private static byte[] onnx;
  @TempDir
  static Path work;

  @BeforeAll
  static void start() throws Exception {
    context = ContextBuilder.newBuilder("transient").credentials("unused", "unused").build(BlobStoreContext.class);
    proxy = S3Proxy.builder().blobStore(context.getBlobStore()).endpoint(URI.create("http://127.0.0.1:0"))
        .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS, SECRET).build();
    proxy.start();
    endpoint = URI.create("http://127.0.0.1:" + proxy.getPort());
    onnx = Files.readAllBytes(ProjectModels.modelsDir().resolve("mlp-onnx").resolve("model.onnx"));
    BlobStore store = context.getBlobStore();
    store.createContainerInLocation(null, "models");
    store.putBlob("models", store.blobBuilder("mlp-onnx/model.onnx").payload(onnx).build());
    store.putBlob("models", store.blobBuilder("mlp-onnx/README.md").payload("the mlp".getBytes()).build());
    store.putBlob("models", store.blobBuilder("mlp-onnx/sub dir/notes+1.txt").payload("nested".getBytes()).build());
    store.putBlob("models", store.blobBuilder("single/model.onnx").payload(onnx).build());
  }

  @AfterAll
  static void stop() throws Exception {
    proxy.stop();
    context.close();
  }

  private static ModelCache cache(String name, String access, String secret) {
    return new ModelCache(new ModelCache.Options(work.resolve(name), null, 1L << 30,
        new S3Source.Credentials(access, secret, "us-east-1", endpoint)));
  }

  @Test
  void aPrefixBecomesAFolderThatLoadsAndInfers() throws Exception {
    Path folder = cache("prefix", ACCESS, SECRET).fetch(URI.create("s3://models/mlp-onnx"), "");
    assertThat(folder.resolve("model.onnx")).hasBinaryContent(onnx);
    assertThat(folder.resolve("README.md")).hasContent("the mlp");
    assertThat(folder.resolve("sub dir").resolve("notes+1.txt")).hasContent("nested");
    try (ModelRunner r = ModelRunners.load(ProjectModels.mlpOnnx().uri(folder).build(), List.of())) {
      assertThat(r.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp-onnx")))).get(0).get(0).shape())
          .containsExactly(2, 10);
    }
  }

  @Test
  void anS3SpecLoadsThroughModelRunnersWithTheAwsSettingsOfTheNode() {
    Path dir = work.resolve("node");
    System.setProperty("kiln.model.cache", dir.toString());
    System.setProperty("aws.accessKeyId", ACCESS);
    System.setProperty("aws.secretAccessKey", SECRET);
    System.setProperty("aws.region", "us-east-1");
    System.setProperty("aws.endpointUrl", endpoint.toString());
    try (ModelRunner r = ModelRunners.load(ProjectModels.mlpOnnx().uri("s3://models/mlp-onnx").build(), List.of())) {
      assertThat(r.spec().uri()).startsWith(dir);
      assertThat(r.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp-onnx")))).get(0).get(0).shape())
          .containsExactly(2, 10);
    } finally {
      for (String p : List.of("kiln.model.cache", "aws.accessKeyId", "aws.secretAccessKey", "aws.region",
          "aws.endpointUrl")) {
        System.clearProperty(p);
      }
    }
  }

  @Test
  void anObjectBecomesAOneFileFolderAndItsSha256IsChecked() throws Exception {
    String sha = RemoteModelUriTest.sha256(onnx);
    Path folder = cache("object", ACCESS, SECRET).fetch(URI.create("s3://models/single/model.onnx"), sha);
    try (var files = Files.list(folder)) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("model.onnx");
    }
    assertThat(folder.resolve("model.onnx")).hasBinaryContent(onnx);
    assertThatThrownBy(() -> cache("object-bad", ACCESS, SECRET)
        .fetch(URI.create("s3://models/single/model.onnx"), "1".repeat(64)))
        .hasMessageContaining("sha256 mismatch: expected " + "1".repeat(64) + ", got " + sha);
  }

  @Test
  void wrongCredentialsFailNamingTheStatus() {
    assertThatThrownBy(() -> cache("wrong", ACCESS, "not-the-secret").fetch(URI.create("s3://models/mlp-onnx"), ""))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("S3 answered HTTP 403")
        .hasMessageContaining("AWS_SECRET_ACCESS_KEY");
    assertThatThrownBy(() -> cache("none", null, null).fetch(URI.create("s3://models/mlp-onnx"), ""))
        .hasMessageContaining("needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }

  @Test
  void aKeyThatIsNeitherObjectNorPrefixFails() {
    assertThatThrownBy(() -> cache("missing", ACCESS, SECRET).fetch(URI.create("s3://models/nothing-here"), ""))
        .hasMessageContaining("has no object nothing-here and nothing under nothing-here/");
  }
}
