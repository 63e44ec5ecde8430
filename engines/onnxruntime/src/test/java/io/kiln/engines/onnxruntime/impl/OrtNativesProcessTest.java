package io.kiln.engines.onnxruntime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.testsupport.ProjectModels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * ONNX Runtime's libraries come from Kiln's per-user cache, not a new temporary folder per process: a JVM that loads a
 * model and is then gone without running its exit hooks (as a killed node is) leaves no file in its temporary folder,
 * and the next one maps the same files without writing them again.
 */
@EnabledOnOs(OS.LINUX)
class OrtNativesProcessTest {

  @TempDir
  Path dir;

  /** Loads models/text-onnx through the engine, prints the mapped ONNX Runtime libraries, and halts. */
  public static void main(String[] args) throws Exception {
    ModelRunners.load(ModelSpec.builder().uri(ProjectModels.modelsDir().resolve("text-onnx"))
        .engine(ModelSpec.ENGINE_ONNX).input("text", DataType.BYTES, -1).output("exclaimed", DataType.BYTES, -1)
        .output("same", DataType.BYTES, -1).intraOpThreads(1).interOpThreads(1).build(), List.of());
    try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
      maps.filter(l -> l.contains("libonnxruntime")).map(l -> l.substring(l.indexOf('/'))).distinct()
          .forEach(System.out::println);
    }
    System.out.flush();
    Runtime.getRuntime().halt(0); // no exit hooks, no deleteOnExit: what SIGKILL leaves
  }

  List<String> child(Path tmp, Path cache) throws Exception {
    Path out = dir.resolve("out-" + System.nanoTime());
    String cp = System.getProperty("surefire.test.class.path", ""); // Surefire may run tests from a manifest-only jar
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + tmp, "-Dkiln.cache.dir=" + cache,
        "-cp", cp.isBlank() ? System.getProperty("java.class.path") : cp, OrtNativesProcessTest.class.getName())
        .redirectErrorStream(true).redirectOutput(out.toFile()).start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the child exits").isTrue();
    List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(String.join("\n", lines)).isZero();
    return lines;
  }

  /**
   * The files under {@code tmp}. ONNX Runtime 1.21 still makes its own temporary folder and only marks it for deletion
   * at exit: a killed process leaves it, empty (20 MB of libraries in it without the cache).
   */
  static List<Path> filesIn(Path tmp) throws Exception {
    try (Stream<Path> all = Files.walk(tmp)) {
      return all.filter(Files::isRegularFile).toList();
    }
  }

  @Test
  void aKilledProcessLeavesNoLibrariesBehindAndTheNextReusesTheCache() throws Exception {
    Path tmp = Files.createDirectory(dir.resolve("tmp"));
    Path cache = dir.resolve("cache");

    List<String> first = child(tmp, cache);
    Path lib = cache.resolve("natives");
    assertThat(first).filteredOn(l -> l.endsWith("/libonnxruntime.so")).singleElement()
        .satisfies(l -> assertThat(Path.of(l)).startsWith(lib));
    Path mapped = Path.of(first.stream().filter(l -> l.endsWith("/libonnxruntime.so")).findFirst().orElseThrow());
    assertThat(first).filteredOn(l -> l.endsWith("/libonnxruntime4j_jni.so")).singleElement()
        .satisfies(l -> assertThat(Path.of(l).getParent()).isEqualTo(mapped.getParent()));
    assertThat(filesIn(tmp)).as("what the process left in its temporary folder").isEmpty();

    FileTime written = Files.getLastModifiedTime(mapped);
    Files.setLastModifiedTime(mapped, FileTime.fromMillis(written.toMillis() - 60_000));
    FileTime marked = Files.getLastModifiedTime(mapped);
    assertThat(child(tmp, cache)).contains(mapped.toString());
    assertThat(Files.getLastModifiedTime(mapped)).as("not written again").isEqualTo(marked);
    assertThat(filesIn(tmp)).isEmpty();
  }
}
