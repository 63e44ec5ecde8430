package io.kiln.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ClassArchive}: real child JVMs record a class-data archive and map it, on this test's class path. */
@Tag("slow")
class ClassArchiveTest {

  /** A child JVM that loads a class from a jar (AssertJ) and one from this module's test classes, then exits. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      System.out.println(org.assertj.core.api.Assertions.class.getName() + " " + ClassArchiveTest.class.getName());
      if (args.length > 0 && args[0].equals("hold")) {
        System.out.flush();
        java.util.concurrent.locks.LockSupport.park(); // until the test kills it
      }
    }
  }

  private static List<String> javaArgs() {
    return List.of("-cp", KilnProcess.testClasspath(), Child.class.getName());
  }

  private static KilnProcess.Result run(ClassArchive.Plan plan, Path log, String... more) {
    List<String> cmd = new ArrayList<>(List.of(KilnProcess.javaBinary()));
    cmd.addAll(plan.jvmFlags());
    cmd.addAll(List.of(more));
    cmd.addAll(plan.javaArgs());
    return KilnProcess.command(cmd).log(log).run(Duration.ofMinutes(2));
  }

  @Test
  void theFirstJvmRecordsTheArchiveAndTheNextMapsTheClassesOfItsJars(@TempDir Path dir) throws Exception {
    ClassArchive.Plan first = ClassArchive.plan(dir, KilnProcess.javaBinary(), List.of("-Xmx64m"), javaArgs());
    assertThat(first.recording()).isNotNull();
    assertThat(first.jvmFlags()).anyMatch(f -> f.startsWith("-XX:ArchiveClassesAtExit="));
    // Another JVM of the same class path and flags while the first records: runs without, records nothing.
    ClassArchive.Plan meanwhile = ClassArchive.plan(dir, KilnProcess.javaBinary(), List.of("-Xmx64m"), javaArgs());
    assertThat(meanwhile.recording()).isNull();
    assertThat(meanwhile.jvmFlags()).containsExactly("-Xmx64m");

    // An archive of the same start on jars since changed: the new one replaces it.
    Path older = dir.resolve(first.recording().prefix() + "0123456789abcdef.jsa");
    Files.writeString(older, "an archive of older jars");
    KilnProcess.Result recorded = run(first, dir.resolve("first.out"));
    assertThat(recorded.code()).as(recorded.output()).isZero();
    assertThat(recorded.output()).isEqualTo("org.assertj.core.api.Assertions io.kiln.testkit.ClassArchiveTest\n");
    first.recording().finish(recorded.code());
    assertThat(first.recording().archive()).isNotEmptyFile();
    assertThat(first.recording().marker()).doesNotExist();
    assertThat(older).doesNotExist();

    // A system property does not split the archive: the next JVM maps it.
    ClassArchive.Plan next = ClassArchive.plan(dir, KilnProcess.javaBinary(), List.of("-Xmx64m", "-Dkiln.home=/x"),
        javaArgs());
    assertThat(next.recording()).isNull();
    assertThat(next.jvmFlags()).contains("-XX:SharedArchiveFile=" + first.recording().archive(), "-Xshare:auto");
    KilnProcess.Result mapped = run(next, dir.resolve("next.out"), "-Xlog:class+load=info");
    assertThat(mapped.code()).as(mapped.output()).isZero();
    assertThat(mapped.output().lines().filter(l -> l.contains(" org.assertj.core.api.Assertions source:")))
        .singleElement().asString().endsWith("source: shared objects file (top)");
  }

  @Test
  void kilnProcessClosesItsRecorderWithSigtermSoThatTheNextJvmMapsTheArchive(@TempDir Path dir) throws Exception {
    String before = System.getProperty("kiln.test.classArchiveDir");
    System.setProperty("kiln.test.classArchiveDir", dir.toString());
    try {
      KilnProcess.Builder held = KilnProcess.java(Child.class.getName()).jvmFlags("-Xmx64m").args("hold")
          .log(dir.resolve("recorder.out"));
      try (KilnProcess recorder = held.start()) {
        assertThat(recorder.command())
            .anyMatch(a -> a.startsWith("-XX:ArchiveClassesAtExit="));
        recorder.awaitLog("ClassArchiveTest", Duration.ofMinutes(1));
      } // close(): SIGTERM, and the JVM writes the archive as it exits
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30))
          .until(() -> Files.list(dir).anyMatch(f -> f.toString().endsWith(".jsa")));
      try (KilnProcess next = KilnProcess.java(Child.class.getName()).jvmFlags("-Xmx64m").args("hold")
          .log(dir.resolve("next.out")).start()) {
        assertThat(next.command())
            .anyMatch(a -> a.startsWith("-XX:SharedArchiveFile=" + dir));
      }
    } finally {
      if (before == null) {
        System.clearProperty("kiln.test.classArchiveDir");
      } else {
        System.setProperty("kiln.test.classArchiveDir", before);
      }
    }
  }

  @Test
  void aKilledRecorderLeavesNoArchiveAndTheNextJvmRecords(@TempDir Path dir) throws Exception {
    ClassArchive.Plan first = ClassArchive.plan(dir, KilnProcess.javaBinary(), List.of("-Xmx64m"), javaArgs());
    List<String> cmd = new ArrayList<>(List.of(KilnProcess.javaBinary()));
    cmd.addAll(first.jvmFlags());
    cmd.addAll(first.javaArgs());
    cmd.add("hold");
    try (KilnProcess p = KilnProcess.command(cmd).log(dir.resolve("held.out")).start()) {
      p.awaitLog("ClassArchiveTest", Duration.ofMinutes(1));
      p.kill();
      first.recording().finish(p.process().exitValue());
    }
    assertThat(first.recording().archive()).doesNotExist();
    assertThat(first.recording().written()).doesNotExist();
    assertThat(ClassArchive.plan(dir, KilnProcess.javaBinary(), List.of("-Xmx64m"), javaArgs()).recording())
        .isNotNull();
  }

  @Test
  void aFolderOnTheClassPathBecomesAJarOfItsFilesOncePerContent(@TempDir Path dir) throws Exception {
    Path classes = Files.createDirectories(dir.resolve("module/target/classes/io/kiln"));
    Files.writeString(classes.resolve("A.txt"), "a");
    Path folder = dir.resolve("module/target/classes");
    Path empty = Files.createDirectories(dir.resolve("empty"));
    String path = String.join(File.pathSeparator, "/no/such.jar", folder.toString(), empty.toString());

    String[] entries = ClassArchive.jarsOnly(dir, path).split(File.pathSeparator);
    assertThat(entries[0]).isEqualTo("/no/such.jar");
    assertThat(entries[2]).isEqualTo(empty.toString());
    assertThat(entries[1]).startsWith(dir.resolve("module-classes-").toString()).endsWith(".jar");
    try (JarFile jar = new JarFile(entries[1])) {
      assertThat(jar.getEntry("io/kiln/A.txt")).isNotNull();
      assertThat(new String(jar.getInputStream(jar.getEntry("io/kiln/A.txt")).readAllBytes())).isEqualTo("a");
    }
    assertThat(ClassArchive.jarsOnly(dir, path).split(File.pathSeparator)[1]).isEqualTo(entries[1]);

    // Compiled again: a jar of the new content replaces the old one.
    Files.setLastModifiedTime(classes.resolve("A.txt"), FileTime.fromMillis(0));
    assertThat(ClassArchive.jarsOnly(dir, path).split(File.pathSeparator)[1]).isNotEqualTo(entries[1]);
    assertThat(Path.of(entries[1])).doesNotExist();
  }
}
