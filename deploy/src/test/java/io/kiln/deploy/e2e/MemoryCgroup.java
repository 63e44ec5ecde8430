package io.kiln.deploy.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A memory cgroup the test makes (cgroup v2 {@code memory.max} where the unified hierarchy has the memory
 * controller, else v1 {@code memory.limit_in_bytes}), and an interpreter wrapper that starts each Python worker
 * in a child cgroup of its own (named after the worker, the last argument {@code kiln_worker.py} gets) under
 * that limit, so the kernel's OOM killer — not an allocator returning null — ends a worker that outgrows it.
 * Kiln itself has no memory limit for a worker's process; this is the harness doing what a user's wrapper (or
 * the container runtime) would. {@link #available()} says whether this machine lets us (root, writable cgroupfs).
 */
final class MemoryCgroup implements AutoCloseable {

  private static final Path V2 = Path.of("/sys/fs/cgroup");
  private static final Path V2_UNIFIED = Path.of("/sys/fs/cgroup/unified");
  private static final Path V1 = Path.of("/sys/fs/cgroup/memory");

  final Path base;
  final String version;
  final long limitBytes;

  private MemoryCgroup(Path base, String version, long limitBytes) {
    this.base = base;
    this.version = version;
    this.limitBytes = limitBytes;
  }

  /** The hierarchy to use, or null when none is writable here. */
  static Path root() {
    for (Path v2 : new Path[] {V2, V2_UNIFIED}) {
      if (controllers(v2).contains("memory") && Files.isWritable(v2)) {
        return v2;
      }
    }
    return Files.isWritable(V1) && Files.exists(V1.resolve("memory.limit_in_bytes")) ? V1 : null;
  }

  static boolean available() {
    return root() != null;
  }

  private static String controllers(Path dir) {
    try {
      return Files.readString(dir.resolve("cgroup.controllers"));
    } catch (IOException e) {
      return "";
    }
  }

  /** Makes {@code <root>/<name>}; each worker's process gets {@code limitBytes} in a child of it. */
  static MemoryCgroup create(String name, long limitBytes) {
    Path root = root();
    if (root == null) {
      throw new IllegalStateException("no writable memory cgroup hierarchy here");
    }
    boolean v2 = !root.equals(V1);
    Path base = root.resolve(name + "-" + ProcessHandle.current().pid());
    try {
      Files.createDirectories(base);
      if (v2) {
        Files.writeString(base.resolve("cgroup.subtree_control"), "+memory");
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make the cgroup " + base, e);
    }
    return new MemoryCgroup(base, v2 ? "v2" : "v1", limitBytes);
  }

  /**
   * A {@code /bin/sh} script, usable as {@code python.interpreter}, that moves itself into
   * {@code <base>/<worker>} (made with the limit when missing) and then execs {@code python}.
   */
  Path wrapper(Path dir, String python) {
    String limitFile = version.equals("v2") ? "memory.max" : "memory.limit_in_bytes";
    String script = """
        #!/bin/sh
        # Runs a Kiln Python worker in a memory cgroup of its own (written by the test harness).
        for last; do :; done
        cg="%s/$(printf '%%s' "$last" | tr -c 'A-Za-z0-9' '_')"
        mkdir -p "$cg"
        echo %d > "$cg/%s"
        %s
        echo $$ > "$cg/cgroup.procs"
        exec %s "$@"
        """.formatted(base, limitBytes, limitFile,
        version.equals("v2") ? "echo 0 > \"$cg/memory.swap.max\" 2>/dev/null" : "echo 0 > \"$cg/memory.swappiness\" 2>/dev/null",
        python);
    try {
      Path file = dir.resolve("python-in-cgroup.sh");
      Files.writeString(file, script);
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** OOM kills the kernel counted in the workers' cgroups (v1 {@code memory.oom_control}, v2 {@code memory.events}). */
  long oomKills() {
    try (Stream<Path> children = Files.list(base)) {
      return children.filter(Files::isDirectory).mapToLong(this::oomKillsOf).sum();
    } catch (IOException e) {
      return -1;
    }
  }

  private long oomKillsOf(Path cg) {
    Path file = cg.resolve(version.equals("v2") ? "memory.events" : "memory.oom_control");
    try {
      for (String line : Files.readAllLines(file)) {
        if (line.startsWith("oom_kill ")) {
          return Long.parseLong(line.substring("oom_kill ".length()).strip());
        }
      }
    } catch (IOException | NumberFormatException e) {
      return 0;
    }
    return 0;
  }

  /**
   * Removes the cgroups (rmdir each, children first). A cgroup holding a process cannot go, and the workers'
   * processes may still be exiting when the cluster has closed: retried until they are gone, at most 30 s.
   */
  @Override
  public void close() {
    try {
      org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30))
          .pollInterval(java.time.Duration.ofMillis(100)).until(this::removeAll);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      System.err.println("could not remove the test's cgroup " + base + ": " + e.getMessage());
    }
  }

  private boolean removeAll() {
    try (Stream<Path> all = Files.walk(base, 1)) {
      for (Path d : all.filter(Files::isDirectory).sorted(Comparator.reverseOrder()).toList()) {
        try {
          Files.delete(d);
        } catch (IOException e) {
          // a process in it is still exiting: next round
        }
      }
    } catch (IOException e) {
      // gone already
    }
    return !Files.exists(base);
  }
}
