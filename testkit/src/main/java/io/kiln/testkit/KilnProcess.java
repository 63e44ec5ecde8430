package io.kiln.testkit;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * One process a test starts and owns: a Kiln node or command (a JVM on the test class path, the distribution's
 * {@code java -jar}, the {@code ./kiln} launcher) or any other program. Its output (stdout and stderr together) goes
 * to a log file; every wait fails at once, with the exit code and the log's tail, if the process exits first, and
 * after its time with what it waited for and the log's tail. The tests' one launcher: the wait loop is written here
 * only.
 *
 * <pre>{@code
 * try (KilnProcess node = KilnProcess.java("io.kiln.deploy.KilnCli").args("start", "--head", "--foreground")
 *     .directory(home).log(home.resolve("head.out")).start()) {
 *   node.awaitLog("kiln: node head", Duration.ofSeconds(120));
 *   node.awaitHttp(port, "/v2/health/ready", Duration.ofSeconds(60));
 * }
 * }</pre>
 *
 * <p>Waits poll (Awaitility) from the calling thread; {@link #close} kills the process if it still runs.
 */
public final class KilnProcess implements AutoCloseable {

  /**
   * The {@code kiln} script's JVM flags (Hazelcast's on Java 17, offline DJL), sized for small test nodes: 512 MiB
   * heap, serial GC, C1 only, so a few of them share two cores.
   */
  public static final List<String> JVM_FLAGS = List.of("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
      "--add-modules", "java.se", "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
      "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens", "java.management/sun.management=ALL-UNNAMED",
      "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
      "-Dai.djl.offline=true", "-Dhazelcast.phone.home.enabled=false");

  /** How long {@link #close} lets a JVM that records the class-data archive exit after SIGTERM. */
  static final int RECORDER_GRACE_SECONDS = 20;

  /** Lines of the log a failure message quotes. */
  public static final int TAIL_LINES = 60;

  private static final Duration POLL = Duration.ofMillis(200);
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();

  private final String name;
  private final Process process;
  private final Path log;
  private final List<String> command;
  /** Set when this JVM records the class-data archive, which it writes as it exits (not when killed). */
  private final ClassArchive.Recording recording;

  private KilnProcess(String name, List<String> command, Process process, Path log,
                      ClassArchive.Recording recording) {
    this.name = name;
    this.command = List.copyOf(command);
    this.process = process;
    this.log = log;
    this.recording = recording;
  }

  /** {@code java JVM_FLAGS -cp <test class path> mainClass}: a JVM of the running tests' own classes. */
  public static Builder java(String mainClass) {
    return new Builder(List.of(javaBinary())).javaArgs(List.of("-cp", testClasspath(), mainClass));
  }

  /** {@code java JVM_FLAGS -jar jar}: a built distribution. */
  public static Builder jar(Path jar) {
    return new Builder(List.of(javaBinary())).javaArgs(List.of("-jar", jar.toAbsolutePath().toString()));
  }

  /** Any command, as given (no JVM flags added). */
  public static Builder command(List<String> command) {
    return new Builder(command);
  }

  /** The running JVM's {@code java}. */
  public static String javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** The test class path (Surefire and Failsafe may run tests from a manifest-only jar). */
  public static String testClasspath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  /** How to start one process. Mutable; {@link #start} may be called once. */
  public static final class Builder {
    private final List<String> command;
    private final List<String> wrapper = new ArrayList<>();
    private final List<String> jvmFlags = new ArrayList<>();
    private List<String> javaArgs;
    private final List<String> args = new ArrayList<>();
    private final Map<String, String> env = new LinkedHashMap<>();
    private final List<String> envRemoved = new ArrayList<>();
    private boolean clearEnv;
    private boolean stdinOpen;
    private Path directory;
    private Path log;
    private String name;

    private Builder(List<String> command) {
      this.command = List.copyOf(command);
    }

    private Builder javaArgs(List<String> v) {
      javaArgs = v;
      jvmFlags.addAll(JVM_FLAGS);
      return this;
    }

    /** A short name for messages (default: the log file's name). */
    public Builder name(String v) {
      name = v;
      return this;
    }

    /** JVM flags after {@link #JVM_FLAGS} (a later {@code -Xmx} wins); only for {@link #java} and {@link #jar}. */
    public Builder jvmFlags(String... flags) {
      return jvmFlags(List.of(flags));
    }

    public Builder jvmFlags(List<String> flags) {
      if (javaArgs == null) {
        throw new IllegalStateException("jvmFlags: " + command + " is not a JVM started by KilnProcess.java/jar");
      }
      jvmFlags.addAll(flags);
      return this;
    }

    /** The program's arguments, appended. */
    public Builder args(String... v) {
      return args(List.of(v));
    }

    public Builder args(List<String> v) {
      args.addAll(v);
      return this;
    }

    /** A command that execs its arguments (e.g. {@code ip netns exec NS}), so the process is still the program. */
    public Builder wrapper(List<String> v) {
      wrapper.addAll(v);
      return this;
    }

    public Builder directory(Path v) {
      directory = v;
      return this;
    }

    /** Where the output goes (created with its folder); default a temporary file. */
    public Builder log(Path v) {
      log = v;
      return this;
    }

    public Builder env(String key, String value) {
      env.put(key, value);
      return this;
    }

    public Builder env(Map<String, String> v) {
      env.putAll(v);
      return this;
    }

    /** Removes inherited variables whose name starts with {@code prefix} (before {@link #env} applies). */
    public Builder withoutEnv(String prefix) {
      envRemoved.add(prefix);
      return this;
    }

    /** Starts from an empty environment: only what {@link #env} gives. */
    public Builder clearEnv() {
      clearEnv = true;
      return this;
    }

    /** Keeps stdin a pipe ({@link KilnProcess#closeStdin()} closes it); by default it reads {@code /dev/null}. */
    public Builder stdinPipe() {
      stdinOpen = true;
      return this;
    }

    /** The command line {@link #start} runs. */
    public List<String> commandLine() {
      return line(jvmFlags, javaArgs);
    }

    /** The command with a JVM's {@code flags} and {@code jvmArgs} ({@code -cp PATH Main}, {@code -jar JAR}). */
    private List<String> line(List<String> flags, List<String> jvmArgs) {
      List<String> cmd = new ArrayList<>(wrapper);
      cmd.addAll(command);
      if (jvmArgs != null) {
        cmd.addAll(flags);
        cmd.addAll(jvmArgs);
      }
      cmd.addAll(args);
      return cmd;
    }

    /** Starts the process. */
    public KilnProcess start() {
      try {
        Path out = log != null ? log : Files.createTempFile("kiln-process-", ".log");
        if (out.toAbsolutePath().getParent() != null) {
          Files.createDirectories(out.toAbsolutePath().getParent());
        }
        ClassArchive.Plan plan = javaArgs != null && ClassArchive.enabled()
            ? ClassArchive.plan(ClassArchive.folder(), command.get(0), jvmFlags, javaArgs) : null;
        List<String> cmd = plan == null ? commandLine() : line(plan.jvmFlags(), plan.javaArgs());
        ProcessBuilder b = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
        if (!stdinOpen) {
          b.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        }
        if (directory != null) {
          b.directory(directory.toFile());
        }
        if (clearEnv) {
          b.environment().clear();
        }
        envRemoved.forEach(prefix -> b.environment().keySet().removeIf(k -> k.startsWith(prefix)));
        b.environment().putAll(env);
        ClassArchive.Recording recording = plan == null ? null : plan.recording();
        KilnProcess p = new KilnProcess(name != null ? name : out.getFileName().toString(), cmd, b.start(), out,
            recording);
        if (recording != null) {
          recording.finishWhenGone(p.process);
        }
        return p;
      } catch (IOException e) {
        throw new UncheckedIOException("could not start " + commandLine(), e);
      }
    }

    /** Runs the command to its end (at most {@code within}, then it is killed and this fails with its log). */
    public Result run(Duration within) {
      KilnProcess p = start();
      try {
        int code = p.awaitExit(within);
        return new Result(code, p.log());
      } finally {
        p.kill();
      }
    }
  }

  /** A finished command: its exit code and output. */
  public record Result(int code, String output) {
  }

  public String name() {
    return name;
  }

  public Process process() {
    return process;
  }

  /** The command line it was started with (a JVM's with its class-data archive flags, {@link ClassArchive}). */
  public List<String> command() {
    return command;
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** The log file. */
  public Path logFile() {
    return log;
  }

  /** The output so far; empty if there is none yet. */
  public String log() {
    try {
      return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      return "(log unreadable: " + e + ")";
    }
  }

  /** The output's last {@link #TAIL_LINES} lines. */
  public String logTail() {
    String[] lines = log().split("\n", -1);
    int from = Math.max(0, lines.length - TAIL_LINES);
    String kept = String.join("\n", List.of(lines).subList(from, lines.length));
    return from > 0 ? "[... " + from + " lines before]\n" + kept : kept;
  }

  /**
   * Waits until {@code probe} yields a value, polling every 200 ms; a probe that throws counts as "not yet" unless it
   * throws an {@link AssertionError}, which fails the wait at once.
   *
   * @throws AssertionError at once if the process exits first, or after {@code within}; both name {@code what} and
   *     quote the log's tail
   */
  public <T> T await(String what, Duration within, Callable<Optional<T>> probe) {
    AtomicReference<T> found = new AtomicReference<>();
    AtomicReference<Throwable> lastError = new AtomicReference<>();
    try {
      Awaitility.await(name + ": " + what).atMost(within).pollDelay(Duration.ZERO).pollInterval(POLL).until(() -> {
        Optional<T> v;
        try {
          v = probe.call();
        } catch (AssertionError e) {
          throw e;
        } catch (Exception e) {
          lastError.set(e);
          v = Optional.empty();
        }
        if (v.isPresent()) {
          found.set(v.get());
          return true;
        }
        if (!process.isAlive()) {
          throw new AssertionError(name + " exited with " + process.exitValue() + " before " + what + "; log "
              + log + ":\n" + logTail());
        }
        return false;
      });
    } catch (ConditionTimeoutException e) {
      Throwable last = lastError.get();
      throw new AssertionError(name + ": not " + what + " within " + within
          + (last == null ? "" : " (last probe failed: " + last + ")") + "; log " + log + ":\n" + logTail(), e);
    }
    return found.get();
  }

  /** {@link #await(String, Duration, Callable)} for a condition. */
  public void awaitTrue(String what, Duration within, Callable<Boolean> condition) {
    await(what, within, () -> Boolean.TRUE.equals(condition.call()) ? Optional.of(Boolean.TRUE) : Optional.empty());
  }

  /** Waits for {@code text} in the output. */
  public void awaitLog(String text, Duration within) {
    awaitTrue("logged '" + text + "'", within, () -> log().contains(text));
  }

  /** Waits for an output line starting with {@code prefix}; returns the rest of that line (the first such line). */
  public String awaitLogLine(String prefix, Duration within) {
    return await("logged a line '" + prefix + "...'", within, () -> log().lines()
        .filter(l -> l.startsWith(prefix)).findFirst().map(l -> l.substring(prefix.length()).trim()));
  }

  /** Waits until {@code GET http://127.0.0.1:port/path} answers 200 (a refused connection is "not yet"). */
  public void awaitHttp(int port, String path, Duration within) {
    URI uri = URI.create("http://127.0.0.1:" + port + path);
    awaitTrue("answering GET " + uri, within, () -> HTTP.send(HttpRequest.newBuilder(uri)
        .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200);
  }

  /**
   * Waits (at most {@code within}) for the process to end, and returns its exit code.
   *
   * @throws AssertionError if it still runs then (it is left running), quoting the log's tail
   */
  public int awaitExit(Duration within) {
    try {
      if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError(name + " did not end within " + within + "; log " + log + ":\n" + logTail());
      }
      return process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(name + ": interrupted while waiting for its end", e);
    }
  }

  /** Closes stdin (a node that reads it leaves its cluster cleanly). */
  public void closeStdin() {
    try {
      process.getOutputStream().close();
    } catch (IOException e) {
      // already closed: the process went away
    }
  }

  /**
   * SIGTERM (a Kiln node drains and leaves), then waits up to {@code grace}; SIGKILL if it still runs. Returns the
   * exit code.
   */
  public int stop(Duration grace) {
    process.destroy();
    try {
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      }
      return process.isAlive() ? -1 : process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
      return -1;
    }
  }

  /** SIGKILL: the process gets no chance to clean up; waits (30 s at most) until it is gone. */
  public void kill() {
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Kills the process if it still runs; a JVM recording the class-data archive ({@link ClassArchive}) is stopped
   * (SIGTERM, {@value #RECORDER_GRACE_SECONDS} s at most) so that it writes it.
   */
  @Override
  public void close() {
    if (process.isAlive()) {
      if (recording != null) {
        stop(Duration.ofSeconds(RECORDER_GRACE_SECONDS));
      } else {
        kill();
      }
    }
  }

  @Override
  public String toString() {
    return name + " (pid " + process.pid() + ", log " + log + ")";
  }
}
