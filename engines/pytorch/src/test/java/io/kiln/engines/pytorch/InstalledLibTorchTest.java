package io.kiln.engines.pytorch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.engine.Engine;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checks on an installed libtorch, against real folders laid out as pip's torch and libtorch archives are. */
class InstalledLibTorchTest {

  @TempDir
  Path tmp;

  /** A pip torch: site-packages/torch/{version.py, lib/libtorch.so}. */
  private Path pipTorch(String version, String... libs) throws IOException {
    Path torch = Files.createDirectories(tmp.resolve("site-packages/torch"));
    Files.writeString(torch.resolve("version.py"), "from typing import Optional\n\n__all__ = ['__version__']\n"
        + "__version__ = '" + version + "'\ncuda: Optional[str] = '12.8'\n");
    Path lib = Files.createDirectories(torch.resolve("lib"));
    Files.writeString(lib.resolve("libtorch.so"), "");
    for (String l : libs) {
      Files.writeString(lib.resolve(l), "");
    }
    return lib;
  }

  /** What the pytorch-jni jar on Kiln's class path holds, read from the real jar. */
  private static final Function<String, InputStream> CLASS_PATH =
      name -> InstalledLibTorch.class.getClassLoader().getResourceAsStream(name);
  /** The pytorch-jni version on the class path (e.g. 2.7.1-0.36.0; 2.5.1-0.33.0 with -Pcuda124's versions). */
  private static final String SHIPPED = shippedJni();
  private static final String TORCH = SHIPPED.substring(0, SHIPPED.indexOf('-'));

  private static String shippedJni() {
    try (InputStream in = CLASS_PATH.apply("jnilib/pytorch.properties")) {
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("jni_version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The CUDA flavor the pytorch-jni jar has a linux-x86_64 build of (cu128 in 2.7.1-0.36.0). */
  private static String cudaFlavorInJar() throws IOException {
    URL url = InstalledLibTorch.class.getClassLoader().getResource("jnilib/pytorch.properties");
    try (JarFile jar = ((JarURLConnection) url.openConnection()).getJarFile()) {
      return jar.stream().map(JarEntry::getName).filter(n -> n.matches("jnilib/linux-x86_64/cu\\d+/libdjl_torch.so"))
          .map(n -> n.split("/")[2]).findFirst().orElseThrow();
    }
  }

  @Test
  void aPipTorchOfTheShippedJniVersionUsesTheJniJarForItsCudaFlavor() throws IOException {
    String cuda = cudaFlavorInJar();
    Path lib = pipTorch(TORCH + "+" + cuda, "libtorch_cuda.so");
    InstalledLibTorch t = InstalledLibTorch.inspect(lib, null, null, Engine.getDjlVersion(), CLASS_PATH,
        tmp.resolve("cache"));
    assertThat(t.version()).isEqualTo(TORCH);
    assertThat(t.flavor()).isEqualTo(cuda);
    assertThat(t.jni()).isEqualTo("pytorch-jni " + SHIPPED + " (" + cuda + ")");
    assertThat(t.properties()).containsExactlyInAnyOrderEntriesOf(Map.of("PYTORCH_LIBRARY_PATH", lib.toString(),
        "PYTORCH_VERSION", TORCH, "PYTORCH_FLAVOR", cuda));
  }

  @Test
  void aLibtorchArchiveIsReadFromItsBuildVersionFile() throws IOException {
    Path root = Files.createDirectories(tmp.resolve("libtorch"));
    Files.writeString(root.resolve("build-version"), TORCH + "+cpu\n");
    Path lib = Files.createDirectories(root.resolve("lib"));
    Files.writeString(lib.resolve("libtorch.so"), "");
    InstalledLibTorch t = InstalledLibTorch.inspect(lib, null, null, Engine.getDjlVersion(), CLASS_PATH,
        tmp.resolve("cache"));
    assertThat(t.flavor()).isEqualTo("cpu");
    assertThat(t.describe()).contains("libtorch " + TORCH + " (cpu) from " + lib);
  }

  @Test
  void aNewerTorchWithoutAJniFailsNamingTheVersionsThatWouldWork() throws IOException {
    Path lib = pipTorch("2.11.0+cu130", "libtorch_cuda.so");
    String djl = Engine.getDjlVersion();
    assertThatThrownBy(() -> InstalledLibTorch.inspect(lib, null, null, djl, CLASS_PATH, tmp.resolve("cache")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("libtorch 2.11.0 (cu130)")
        .hasMessageContaining("DJL " + djl + " ships libdjl_torch.so for PyTorch " + TORCH + " only")
        .hasMessageContaining("Python engine");
  }

  @Test
  void aJniLibraryBesideLibtorchOrInDjlsCacheIsUsedAsDjlWould() throws IOException {
    Path lib = pipTorch("2.11.0+cu130");
    Path cached = Files.createDirectories(tmp.resolve("cache/2.11.0-cu130-linux-x86_64"));
    Files.writeString(cached.resolve("0.36.0-libdjl_torch.so"), "");
    assertThat(InstalledLibTorch.inspect(lib, null, null, "0.36.0", CLASS_PATH, tmp.resolve("cache")).jni())
        .isEqualTo(cached.resolve("0.36.0-libdjl_torch.so").toString());
    Files.writeString(lib.resolve("libdjl_torch.so"), "");
    assertThat(InstalledLibTorch.inspect(lib, null, null, "0.36.0", CLASS_PATH, tmp.resolve("cache")).jni())
        .isEqualTo(lib.resolve("libdjl_torch.so").toString());
  }

  @Test
  void aFlavorTheJniJarLacksIsRefused() throws IOException {
    Path lib = pipTorch(TORCH + "+cu100", "libtorch_cuda.so");
    assertThatThrownBy(() -> InstalledLibTorch.inspect(lib, null, null, Engine.getDjlVersion(), CLASS_PATH,
        tmp.resolve("cache")))
        .hasMessageContaining("has no cu100 build");
  }

  @Test
  void explicitVersionAndFlavorWinOverWhatTheFolderSays() throws IOException {
    Path lib = pipTorch("2.11.0+cu130");
    InstalledLibTorch t = InstalledLibTorch.inspect(lib, TORCH, "CPU", Engine.getDjlVersion(), CLASS_PATH,
        tmp.resolve("cache"));
    assertThat(t.version()).isEqualTo(TORCH);
    assertThat(t.flavor()).isEqualTo("cpu");
  }

  @Test
  void badFoldersAndVersionsAreNamed() throws IOException {
    Function<String, InputStream> noJni = name -> null;
    assertThatThrownBy(() -> InstalledLibTorch.inspect(tmp.resolve("nope"), null, null, "0.36.0", noJni, tmp))
        .hasMessageContaining("does not exist");
    Path empty = Files.createDirectories(tmp.resolve("empty/lib"));
    assertThatThrownBy(() -> InstalledLibTorch.inspect(empty, null, null, "0.36.0", noJni, tmp))
        .hasMessageContaining("has no libtorch.so");
    Files.writeString(empty.resolve("libtorch.so"), "");
    assertThatThrownBy(() -> InstalledLibTorch.inspect(empty, null, null, "0.36.0", noJni, tmp))
        .hasMessageContaining("cannot tell the libtorch version");
    assertThatThrownBy(() -> InstalledLibTorch.inspect(empty, "latest", null, "0.36.0", noJni, tmp))
        .hasMessageContaining("'latest' is not of the form");
    assertThatThrownBy(() -> InstalledLibTorch.inspect(empty, "2.7.1", "rocm", "0.36.0", noJni, tmp))
        .hasMessageContaining("flavor 'rocm'");
    Files.writeString(empty.resolve("libtorch_cuda.so"), "");
    assertThatThrownBy(() -> InstalledLibTorch.inspect(empty, "2.7.1", null, "0.36.0", noJni, tmp))
        .hasMessageContaining("CUDA build but its version names no CUDA flavor");
    assertThatThrownBy(() -> InstalledLibTorch.inspect(empty, "2.7.1", "cu128", "0.36.0", noJni, tmp))
        .hasMessageContaining("(no pytorch-jni on the class path)");
  }

  @Test
  void aJniPropertiesFileIsReadAsTheJarWritesIt() throws IOException {
    Path lib = pipTorch("2.5.1+cpu");
    Function<String, InputStream> older = name -> name.equals("jnilib/pytorch.properties")
        ? new ByteArrayInputStream("jni_version=2.5.1-0.33.0\n".getBytes(StandardCharsets.UTF_8))
        : name.endsWith("/cpu/libdjl_torch.so") ? new ByteArrayInputStream(new byte[1]) : null;
    assertThat(InstalledLibTorch.inspect(lib, null, null, "0.33.0", older, tmp.resolve("cache")).jni())
        .isEqualTo("pytorch-jni 2.5.1-0.33.0 (cpu)");
  }
}
