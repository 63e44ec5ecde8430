package io.kiln.engines.python.impl;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.Tensor;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Python worker process ({@code kiln_worker.py}) and the pipes to it: starts it with the worker's
 * environment, exchanges {@link PythonFrames frames} with a deadline each, forwards its stderr to the log
 * line by line, and stops it.
 *
 * <p>Why pipes rather than a Unix domain socket: the process's stdin/stdout exist the moment it starts, need
 * no socket file to create, secure and clean up, end (EOF) exactly when the process dies, and the script
 * moves them to private descriptors so user prints cannot reach them. A socket would buy nothing measurable
 * for frames of this size.
 *
 * <p>Threading: {@link #exchange} is called by one thread at a time (the runner's); {@link #close} may
 * be called from another. A deadline is enforced by a watchdog thread that kills the process, which ends
 * the blocked read or write. It is not on the runtime's {@link io.kiln.runtime.time.Deadlines}: the exchange
 * blocks its runner thread (a pipe read), which is on no event loop, so there it would get a Vert.x timer of
 * its own anyway, one per exchange as here, and a Vert.x dependency this class does not otherwise need; the
 * kill must come from another thread while the runner is blocked, which is what the watchdog is.
 *
 * <p>Errors: whatever breaks the exchange (the process exited or was killed, its reply did not parse, it
 * answered a fatal error, it missed the deadline) kills the process and throws
 * {@link ModelExecutionException} naming the model, the exit status and the last stderr lines; every later
 * exchange throws the same at once. A non-fatal {@code error} reply is returned like any other frame.
 */
final class PythonProcess implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(PythonProcess.class);
  private static final String SCRIPT = "/io/kiln/engines/python/kiln_worker.py";
  private static final int STDERR_LINES_KEPT = 15;
  private static final Duration CLOSE_GRACE = Duration.ofSeconds(2);
  // A process that closed its channel is exiting: long enough for a loaded machine to let it finish on its own.
  private static final Duration EXIT_WAIT = Duration.ofSeconds(3);
  private static final Duration STDERR_DRAIN = Duration.ofSeconds(5);
  /** A per-JVM cache of the extracted script (its content never changes while the JVM runs). */
  private static Path script;

  private final String label;
  private final String model;
  private final Process process;
  private final String interpreter;
  private final Map<String, String> environment;
  private final InputStream in;
  private final OutputStream out;
  private final ScheduledExecutorService watchdog;
  private final ArrayDeque<String> lastLines = new ArrayDeque<>();
  private final Thread stderrPump;
  private long nextId = 1;
  private volatile boolean killedForTimeout;
  private volatile ModelExecutionException failure;
  private volatile boolean closing;

  private PythonProcess(String label, String model, Process process, String interpreter,
                        Map<String, String> environment) {
    this.label = label;
    this.model = model;
    this.process = process;
    this.interpreter = interpreter;
    this.environment = Map.copyOf(environment);
    this.in = new BufferedInputStream(process.getInputStream(), 1 << 16);
    this.out = new BufferedOutputStream(process.getOutputStream(), 1 << 16);
    this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "kiln-python-watchdog-" + label);
      t.setDaemon(true);
      return t;
    });
    this.stderrPump = new Thread(this::pumpStderr, "kiln-python-stderr-" + label);
    stderrPump.setDaemon(true);
    stderrPump.start();
  }

  /** The interpreter command the process runs. */
  String interpreter() {
    return interpreter;
  }

  /** The process's environment. */
  Map<String, String> environment() {
    return environment;
  }

  /**
   * Starts {@code kiln_worker.py} in {@code modelDir} (its working directory) under the configured
   * interpreter. Returns at once; the first {@link #exchange} (a {@code load}) tells whether it runs.
   *
   * @param gpus the worker's GPU indices: {@code CUDA_VISIBLE_DEVICES}, empty string when none
   * @param threads the spec's intra-op threads, 0 to leave the libraries' defaults
   * @param label names the process in thread names, log lines and errors (the worker's name, or the model's)
   * @throws ModelLoadException when the interpreter cannot be found or started, or lacks a module the worker or
   *     model.py imports (see {@link PythonModules})
   */
  static PythonProcess start(Path modelDir, PythonOptions options, List<Integer> gpus, int threads, String label) {
    // The label is an argument only so that ps shows which worker a process belongs to.
    List<String> command = List.of(interpreter(options.interpreter()), "-B", script().toString(), label);
    ProcessBuilder pb = new ProcessBuilder(command).directory(modelDir.toFile());
    Map<String, String> env = pb.environment();
    env.put(PythonOptions.CUDA_VISIBLE_DEVICES, gpus.stream().map(String::valueOf).collect(Collectors.joining(",")));
    if (threads > 0) {
      for (String name : List.of("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")) {
        env.put(name, Integer.toString(threads));
      }
    }
    env.put("PYTHONUNBUFFERED", "1");
    env.putAll(options.env());
    PythonModules.requireImports(command.get(0), modelDir, env, modelDir.toString());
    try {
      Process p = pb.start();
      LOG.info("python {}: started process {} ({} in {})", label, p.pid(), command.get(0), modelDir);
      return new PythonProcess(label, modelDir.toString(), p, command.get(0), env);
    } catch (IOException e) {
      throw new ModelLoadException("python.interpreter: cannot start '" + command.get(0) + "' for model " + modelDir
          + ": " + e.getMessage(), e);
    }
  }

  // A folder is a virtualenv; a bare name is looked up on PATH by the OS.
  private static String interpreter(String configured) {
    if (!configured.contains("/")) {
      return configured;
    }
    Path p = Path.of(configured);
    if (Files.isDirectory(p)) {
      Path python3 = p.resolve("bin").resolve("python3");
      p = Files.isExecutable(python3) ? python3 : p.resolve("bin").resolve("python");
    }
    if (!Files.isRegularFile(p) || !Files.isExecutable(p)) {
      throw new ModelLoadException("python.interpreter: " + p + " is not an executable file"
          + (p.endsWith(Path.of("bin", "python")) ? " (nor is bin/python3 beside it); is " + configured
          + " a virtualenv?" : ""));
    }
    return p.toString();
  }

  /** The worker script, written once per JVM (again if it vanished) into a private temporary folder. */
  static synchronized Path script() {
    if (script == null || !Files.isRegularFile(script)) { // a tmp cleaner may have removed it
      try (InputStream s = PythonProcess.class.getResourceAsStream(SCRIPT)) {
        if (s == null) {
          throw new IllegalStateException(SCRIPT + " is missing from the class path");
        }
        Path dir = Files.createTempDirectory("kiln-python-");
        dir.toFile().deleteOnExit(); // deleted at exit in the reverse order of these calls: the file, then its folder
        Path file = dir.resolve("kiln_worker.py");
        file.toFile().deleteOnExit();
        Files.copy(s, file);
        script = file;
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write the Python worker script", e);
      }
    }
    return script;
  }

  long pid() {
    return process.pid();
  }

  boolean alive() {
    return process.isAlive() && failure == null;
  }

  /**
   * Sends one request frame and reads its reply within {@code timeout}.
   *
   * @return the reply: {@code expectedOp}, or a non-fatal {@code error}
   * @throws ModelExecutionException when the process failed (see the class comment); it is dead afterwards
   */
  PythonFrames.Frame exchange(ObjectNode header, List<Tensor> tensors, Duration timeout, String expectedOp) {
    return exchange(header, tensors, timeout, java.util.Set.of(expectedOp));
  }

  /** {@link #exchange(ObjectNode, List, Duration, String)} for a request that has several good answers. */
  PythonFrames.Frame exchange(ObjectNode header, List<Tensor> tensors, Duration timeout, java.util.Set<String> expectedOps) {
    ModelExecutionException failed = failure;
    if (failed != null) {
      throw new ModelExecutionException(failed.getMessage(), failed);
    }
    long id = nextId++;
    header.put("id", id);
    String op = header.path("op").asText();
    ScheduledFuture<?> kill = watchdog.schedule(() -> {
      killedForTimeout = true;
      process.destroyForcibly();
    }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    PythonFrames.Frame reply;
    try {
      PythonFrames.write(out, header, tensors);
      reply = PythonFrames.read(in);
    } catch (IOException e) {
      boolean garbled = e instanceof PythonFrames.BadFrameException;
      throw fail(killedForTimeout ? "did not answer '" + op + "' within " + timeout.toMillis() + " ms, so it was killed"
          : garbled ? "sent a reply that is not a frame: " + e.getMessage()
          : "died during '" + op + "' (" + e.getMessage() + ")", e, !garbled);
    } finally {
      kill.cancel(false);
    }
    if (killedForTimeout) { // the watchdog fired just as the reply came: the process is dead all the same
      throw fail("answered '" + op + "' only at its deadline of " + timeout.toMillis() + " ms and was killed", null, false);
    }
    if (reply.op().equals("error") && reply.header().path("fatal").asBoolean(true)) {
      throw fail("failed and is exiting: " + PythonFrames.describeError(reply.header()), null, true);
    }
    if (!expectedOps.contains(reply.op()) && !reply.op().equals("error") || reply.id() != id) {
      throw fail("answered '" + op + "' #" + id + " with '" + reply.op() + "' #" + reply.id(), null, false);
    }
    return reply;
  }

  /**
   * Marks the process failed and kills it; with {@code exiting} (it closed the channel or said it is going)
   * it first gets a moment to exit by itself, so that the message tells its own exit status.
   */
  private ModelExecutionException fail(String what, Throwable cause, boolean exiting) {
    boolean killedHere = false;
    String status;
    try {
      if (!exiting || !process.waitFor(EXIT_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        killedHere = process.isAlive();
        kill();
      }
      status = process.waitFor(CLOSE_GRACE.toMillis(), TimeUnit.MILLISECONDS)
          ? exitStatus(process.exitValue(), killedForTimeout || killedHere) : "still running";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      status = "status unknown";
    }
    kill();
    joinStderr();
    process.destroyForcibly(); // closes the pipes: only once the pump has read stderr to its end
    String tail = stderrTail();
    ModelExecutionException e = new ModelExecutionException("the Python process of model " + model + " (" + label
        + ", pid " + process.pid() + ", " + status + ") " + what + (tail.isEmpty() ? "" : "; its last stderr lines:\n" + tail), cause);
    failure = e;
    watchdog.shutdownNow();
    LOG.warn("{}", e.getMessage());
    return e;
  }

  /**
   * Kills the process without closing its pipes. {@link Process#destroyForcibly()} also closes stderr, which cut
   * the pump off after the first line of a traceback when the process had just exited (seen on 2 loaded cores).
   */
  private void kill() {
    process.toHandle().destroyForcibly();
  }

  private static String exitStatus(int code, boolean weKilledIt) {
    if (weKilledIt) {
      return "killed by Kiln";
    }
    // The JDK reports a process killed by signal N as exit value 128 + N.
    if (code > 128 && code < 160) {
      return "killed by signal " + (code - 128) + (code == 137 ? " (SIGKILL: out of memory, or kill -9)" : "");
    }
    return "exit code " + code;
  }

  private void pumpStderr() {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        LOG.info("python {}: {}", label, line);
        synchronized (lastLines) {
          if (lastLines.size() == STDERR_LINES_KEPT) {
            lastLines.removeFirst();
          }
          lastLines.addLast(line);
        }
      }
    } catch (IOException e) {
      LOG.debug("python {}: stderr closed: {}", label, e.toString());
    }
  }

  // The last lines often say why it died (a traceback, "Killed"): let the pump read them. The process is gone by
  // now, so its stderr reaches end of file at once unless a child of it still holds the pipe; 500 ms proved too
  // short on 2 loaded cores (the tail went missing from the message).
  private void joinStderr() {
    try {
      stderrPump.join(STDERR_DRAIN.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  String stderrTail() {
    synchronized (lastLines) {
      return String.join("\n", new ArrayList<>(lastLines));
    }
  }

  /** Asks the process to exit, and kills it if it has not within a short grace. Idempotent. */
  @Override
  public void close() {
    if (closing) {
      return;
    }
    closing = true;
    if (alive()) {
      try {
        exchange(PythonFrames.header("close", 0), List.of(), CLOSE_GRACE, "closed");
        process.waitFor(CLOSE_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      } catch (RuntimeException e) {
        LOG.debug("python {}: did not close gracefully: {}", label, e.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    kill();
    watchdog.shutdownNow();
    joinStderr();
    process.destroyForcibly();
    try {
      out.close();
    } catch (IOException ignored) {
      // already broken: the process is gone
    }
    LOG.info("python {}: process {} stopped", label, process.pid());
  }
}
