package io.kiln.pools.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeCacheTest {

  @TempDir
  Path dir;

  /** A jar holding {@code natives/linux-x64/<name>} with the given contents, and a loader over it. */
  URLClassLoader jar(String file, Map<String, String> libs) throws Exception {
    Path jar = dir.resolve(file);
    try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out)) {
      for (var e : libs.entrySet()) {
        j.putNextEntry(new JarEntry("natives/linux-x64/" + e.getKey()));
        j.write(e.getValue().getBytes(StandardCharsets.UTF_8));
        j.closeEntry();
      }
    }
    return new URLClassLoader(new URL[] {jar.toUri().toURL()}, null);
  }

  @Test
  void theLibrariesTheJarHasAreUnpackedOnceAndReused() throws Exception {
    Path root = dir.resolve("cache");
    try (URLClassLoader loader = jar("a.jar", Map.of("liba.so", "AAAA", "libb.so", "BB"))) {
      Path unpacked = NativeCache.unpack(root, "eng", loader, "natives/linux-x64/",
          List.of("liba.so", "libb.so", "libmissing.so")).orElseThrow();
      assertThat(unpacked.getParent()).isEqualTo(root.resolve("natives"));
      assertThat(unpacked.getFileName().toString()).startsWith("eng-");
      assertThat(unpacked.resolve("liba.so")).hasContent("AAAA");
      assertThat(unpacked.resolve("libb.so")).hasContent("BB");
      assertThat(unpacked.resolve("libmissing.so")).doesNotExist();
      try (var files = Files.list(unpacked)) {
        assertThat(files).hasSize(2); // no part file left behind
      }

      // A later process finds them: nothing is written again.
      FileTime old = FileTime.fromMillis(1_000_000_000_000L);
      Files.setLastModifiedTime(unpacked.resolve("liba.so"), old);
      assertThat(NativeCache.unpack(root, "eng", loader, "natives/linux-x64/", List.of("liba.so", "libb.so",
          "libmissing.so"))).contains(unpacked);
      assertThat(Files.getLastModifiedTime(unpacked.resolve("liba.so"))).isEqualTo(old);

      // A file cut short (a disk that filled up) is written again.
      Files.writeString(unpacked.resolve("libb.so"), "B");
      NativeCache.unpack(root, "eng", loader, "natives/linux-x64/", List.of("liba.so", "libb.so"));
      assertThat(unpacked.resolve("libb.so")).hasContent("BB");
    }
  }

  @Test
  void anotherBuildOfTheLibrariesGetsAFolderOfItsOwn() throws Exception {
    Path root = dir.resolve("cache");
    try (URLClassLoader one = jar("one.jar", Map.of("liba.so", "version 1"));
        URLClassLoader two = jar("two.jar", Map.of("liba.so", "version 2"))) {
      Path first = NativeCache.unpack(root, "eng", one, "natives/linux-x64/", List.of("liba.so")).orElseThrow();
      Path second = NativeCache.unpack(root, "eng", two, "natives/linux-x64/", List.of("liba.so")).orElseThrow();
      assertThat(second).isNotEqualTo(first);
      assertThat(first.resolve("liba.so")).hasContent("version 1");
      assertThat(second.resolve("liba.so")).hasContent("version 2");
    }
  }

  @Test
  void aJarWithoutTheLibrariesUnpacksNothing() throws Exception {
    try (URLClassLoader loader = jar("none.jar", Map.of("other.so", "x"))) {
      assertThat(NativeCache.unpack(dir.resolve("cache"), "eng", loader, "natives/linux-x64/", List.of("liba.so")))
          .isEmpty();
      assertThat(dir.resolve("cache")).doesNotExist();
    }
  }

  @Test
  void aCacheThatCannotBeWrittenSaysWhere() throws Exception {
    Path notAFolder = Files.writeString(dir.resolve("file"), "x");
    try (URLClassLoader loader = jar("a.jar", Map.of("liba.so", "AAAA"))) {
      assertThatThrownBy(() -> NativeCache.unpack(notAFolder, "eng", loader, "natives/linux-x64/",
          List.of("liba.so")))
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining("cannot unpack the eng native libraries under " + notAFolder);
    }
  }

  @Test
  void theCacheRootIsThePropertyThenKilnCacheDirThenXdgThenHome() {
    assertThat(NativeCache.root("/p", Map.of("KILN_CACHE_DIR", "/k", "XDG_CACHE_HOME", "/x"))).isEqualTo(Path.of("/p"));
    assertThat(NativeCache.root(null, Map.of("KILN_CACHE_DIR", "/k", "XDG_CACHE_HOME", "/x")))
        .isEqualTo(Path.of("/k"));
    assertThat(NativeCache.root(" ", Map.of("XDG_CACHE_HOME", "/x"))).isEqualTo(Path.of("/x", "kiln"));
    assertThat(NativeCache.root(null, Map.of()))
        .isEqualTo(Path.of(System.getProperty("user.home"), ".cache", "kiln"));
  }
}
