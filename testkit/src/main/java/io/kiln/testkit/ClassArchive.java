package io.kiln.testkit;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * A class-data archive (AppCDS, {@code -XX:ArchiveClassesAtExit}) shared by the JVMs that {@link KilnProcess#java}
 * and {@link KilnProcess#jar} start: the first JVM of a class path and flags records the classes it loaded when it
 * exits, the later ones map them instead of parsing them again. A test node starts on ~40 % less CPU (the
 * quickstart node to ready: 2.0-2.4 CPU-s against 3.5-3.9, three pairs at load 2), and the suite starts some
 * seventy of them on two cores.
 *
 * <p>JDK 17 records no class path that holds a non-empty folder, so a folder on the test class path
 * ({@code target/classes}, {@code target/test-classes}) is given to the JVM as a jar of the same files, in the
 * same place, made once per content (file names, sizes and times). Where: {@code target/kiln-class-archives} under
 * the test JVM's working folder ({@code kiln.test.classArchiveDir}); a new archive or jar replaces the older ones of
 * the same start or folder (~75 MB an archive of a node on deploy's class path). Off with
 * {@code -Dkiln.test.classArchive=false}.
 *
 * <p>Only one JVM records at a time (a marker file, made atomically, also across the two test JVMs of a module);
 * the archive is used once its recorder has exited by itself or on SIGTERM ({@link KilnProcess#close} stops a
 * recorder that way), and never when it was killed (exit code 137), since the JVM writes the archive as it exits.
 * A JVM that cannot use an archive (another class path, changed jars) ignores it ({@code -Xshare:auto}); the JVM's
 * own CDS messages are off, so a child's output is the program's.
 */
final class ClassArchive {

  /**
   * A marker this old belongs to a recorder whose test JVM is gone (a recorder lives as long as its test keeps it,
   * minutes at most): it is dropped, and the next JVM records.
   */
  private static final Duration STALE_MARKER = Duration.ofMinutes(10);
  private static final List<String> QUIET = List.of("-Xlog:cds*=off");

  /** What a JVM starts with: its flags and arguments, and (when it records) what to do once it exits. */
  record Plan(List<String> jvmFlags, List<String> javaArgs, Recording recording) {
  }

  /** One JVM recording the archive: {@link #finish} keeps what it wrote when it exited cleanly. */
  record Recording(Path marker, Path written, Path archive, String prefix) {
    /** Calls {@link #finish} with the recording JVM's exit code once it has exited. */
    void finishWhenGone(Process jvm) {
      jvm.onExit().thenAccept(gone -> finish(gone.exitValue()));
    }

    void finish(int exitCode) {
      try {
        if (exitCode != 137 && exitCode != 134 && Files.isRegularFile(written) && Files.size(written) > 0) {
          Files.move(written, archive, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          dropOthers(archive, prefix, ".jsa"); // the same start on jars that changed since
        }
        Files.deleteIfExists(written);
        Files.deleteIfExists(marker);
      } catch (IOException e) {
        // The archive only saves time: without it the next JVM records again.
      }
    }
  }

  private ClassArchive() {
  }

  static boolean enabled() {
    return Boolean.parseBoolean(System.getProperty("kiln.test.classArchive", "true"));
  }

  static Path folder() {
    return Path.of(System.getProperty("kiln.test.classArchiveDir", "target/kiln-class-archives")).toAbsolutePath();
  }

  /**
   * The flags and arguments for a JVM started as {@code java jvmFlags javaArgs} ({@code -cp PATH Main} or
   * {@code -jar JAR}), in {@code dir}: with the archive when there is one, recording it when no JVM does yet.
   */
  static Plan plan(Path dir, String java, List<String> jvmFlags, List<String> javaArgs) {
    try {
      Files.createDirectories(dir);
      List<String> args = new ArrayList<>(javaArgs);
      // Named by what the JVM is started with (its archives' common prefix), then by the jars' content.
      String started = key(java, jvmFlags, args, false);
      if (args.size() >= 2 && (args.get(0).equals("-cp") || args.get(0).equals("-classpath"))) {
        args.set(1, jarsOnly(dir, args.get(1)));
      }
      Path archive = dir.resolve(started + "-" + key(java, jvmFlags, args, true) + ".jsa");
      List<String> flags = new ArrayList<>(jvmFlags);
      if (Files.isRegularFile(archive)) {
        flags.add("-XX:SharedArchiveFile=" + archive);
        flags.add("-Xshare:auto");
        flags.addAll(QUIET);
        return new Plan(flags, args, null);
      }
      Path marker = dir.resolve(archive.getFileName() + ".recording");
      try {
        Files.createFile(marker);
      } catch (FileAlreadyExistsException e) {
        FileTime made = Files.getLastModifiedTime(marker);
        if (made.toMillis() < System.currentTimeMillis() - STALE_MARKER.toMillis()) {
          Files.deleteIfExists(marker); // its recorder's test JVM is gone: the next start records
        }
        return new Plan(jvmFlags, args, null);
      }
      Path written = dir.resolve(archive.getFileName() + "." + UUID.randomUUID() + ".tmp");
      flags.add("-XX:ArchiveClassesAtExit=" + written);
      flags.addAll(QUIET);
      return new Plan(flags, args, new Recording(marker, written, archive, started + "-"));
    } catch (IOException e) {
      throw new UncheckedIOException("class-data archive in " + dir, e);
    }
  }

  /** {@code classPath} with each non-empty folder replaced by a jar of its files, made in {@code dir}. */
  static String jarsOnly(Path dir, String classPath) throws IOException {
    List<String> entries = new ArrayList<>();
    for (String e : classPath.split(File.pathSeparator)) {
      Path p = Path.of(e);
      entries.add(Files.isDirectory(p) ? jarOf(dir, p).toString() : e);
    }
    return String.join(File.pathSeparator, entries);
  }

  /**
   * A jar of the folder's files (stored, not compressed), named by the folder and its content; the folder itself
   * when it holds no file (an empty folder is no obstacle to recording).
   */
  private static Path jarOf(Path dir, Path folder) throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.walk(folder)) {
      files = s.filter(Files::isRegularFile).sorted().toList();
    }
    if (files.isEmpty()) {
      return folder;
    }
    MessageDigest md = sha256();
    for (Path f : files) {
      BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
      md.update((folder.relativize(f) + " " + a.size() + " " + a.lastModifiedTime().toMillis() + "\n")
          .getBytes(StandardCharsets.UTF_8));
    }
    Path where = folder.toAbsolutePath().normalize();
    Path module = where.getParent(); // e.g. deploy/target/test-classes: deploy
    module = module != null && module.getParent() != null ? module.getParent() : module;
    String prefix = (module != null && module.getFileName() != null ? module.getFileName() + "-" : "")
        + folder.getFileName() + "-"
        + HexFormat.of().formatHex(sha256().digest(where.toString().getBytes(StandardCharsets.UTF_8))).substring(0, 8)
        + "-";
    Path jar = dir.resolve(prefix + HexFormat.of().formatHex(md.digest()).substring(0, 16) + ".jar");
    if (Files.isRegularFile(jar)) {
      return jar;
    }
    Path tmp = dir.resolve(jar.getFileName() + "." + UUID.randomUUID() + ".tmp");
    try (OutputStream out = Files.newOutputStream(tmp); ZipOutputStream zip = new ZipOutputStream(out)) {
      for (Path f : files) {
        byte[] bytes = Files.readAllBytes(f);
        ZipEntry entry = new ZipEntry(folder.relativize(f).toString().replace(File.separatorChar, '/'));
        CRC32 crc = new CRC32();
        crc.update(bytes);
        entry.setMethod(ZipEntry.STORED);
        entry.setSize(bytes.length);
        entry.setCrc(crc.getValue());
        entry.setLastModifiedTime(Files.getLastModifiedTime(f));
        zip.putNextEntry(entry);
        zip.write(bytes);
        zip.closeEntry();
      }
    }
    Files.move(tmp, jar, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    dropOthers(jar, prefix, ".jar"); // the same folder before it was compiled again
    return jar;
  }

  /** Deletes the files beside {@code kept} whose name has its {@code prefix} and {@code suffix}: older versions. */
  private static void dropOthers(Path kept, String prefix, String suffix) throws IOException {
    try (Stream<Path> s = Files.list(kept.getParent())) {
      for (Path f : s.toList()) {
        String n = f.getFileName().toString();
        if (!f.equals(kept) && n.startsWith(prefix) && n.endsWith(suffix)) {
          Files.deleteIfExists(f);
        }
      }
    }
  }

  /**
   * What an archive depends on: the JVM, its flags but system properties ({@code -D}: a node's home folder must not
   * split the archive), the class path, and ({@code content}) each jar's size and time.
   */
  private static String key(String java, List<String> jvmFlags, List<String> javaArgs, boolean content) {
    MessageDigest md = sha256();
    md.update((Path.of(java).toAbsolutePath().normalize() + " " + Runtime.version() + "\n")
        .getBytes(StandardCharsets.UTF_8));
    for (String f : jvmFlags) {
      if (!f.startsWith("-D")) {
        md.update((f + "\n").getBytes(StandardCharsets.UTF_8));
      }
    }
    boolean pathNext = false;
    for (String a : javaArgs) {
      md.update((a + "\n").getBytes(StandardCharsets.UTF_8));
      if (pathNext) {
        for (String e : content ? a.split(File.pathSeparator) : new String[0]) {
          File f = new File(e);
          md.update((f.length() + " " + f.lastModified() + "\n").getBytes(StandardCharsets.UTF_8));
        }
        break;
      }
      pathNext = a.equals("-cp") || a.equals("-classpath") || a.equals("-jar");
    }
    return HexFormat.of().formatHex(md.digest()).substring(0, 16);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
