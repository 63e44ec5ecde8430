package io.kiln.engines.python.impl;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.ModelLoadException;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The modules a Python model needs, checked in its interpreter before its worker starts: numpy (the worker's own)
 * and every module {@code model.py} imports at its top level outside a {@code try} (an import inside {@code try}
 * is optional by the model's own say). A missing one fails the load at once with a message naming the
 * interpreter, the modules and the interpreters on this machine that have them, instead of a traceback after every
 * restart (issue #36). Nothing is imported by the check ({@code importlib.util.find_spec}), so it costs one short
 * process start. Blocking; thread-safe.
 */
final class PythonModules {

  /** Longer than any interpreter's start on a loaded machine; a check that hangs is skipped, never fatal. */
  private static final Duration CHECK_TIMEOUT = Duration.ofSeconds(30);
  private static final Pattern PYTHON_NAME = Pattern.compile("python3(\\.\\d+)?");
  // argv: the model folder (or "" for none), then the modules to look for; prints one JSON line.
  private static final String SCRIPT = String.join("\n",
      "import ast, importlib.util, json, os, sys",
      "d = sys.argv[1]",
      "names = list(sys.argv[2:])",
      "if d:",
      "    sys.path.insert(0, d)",
      "    tree = ast.parse(open(os.path.join(d, 'model.py'), 'rb').read(), 'model.py')",
      "    for node in tree.body:",
      "        if isinstance(node, ast.Import):",
      "            names += [a.name.split('.')[0] for a in node.names]",
      "        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:",
      "            names.append(node.module.split('.')[0])",
      "seen = []",
      "for n in names:",
      "    if n not in seen:",
      "        seen.append(n)",
      "missing = []",
      "for n in seen:",
      "    try:",
      "        found = importlib.util.find_spec(n) is not None",
      "    except (ImportError, ValueError):",
      "        found = False",
      "    if not found:",
      "        missing.append(n)",
      "print(json.dumps({'executable': os.path.realpath(sys.executable), 'version': sys.version.split()[0], 'missing': missing}))");

  private PythonModules() {
  }

  /**
   * @param interpreter the resolved command the worker will run
   * @param env the worker's environment (its {@code PYTHONPATH} counts)
   * @throws ModelLoadException naming what is missing, when something is; a check that cannot run (a syntax error in
   *     model.py, a hung interpreter) throws nothing: the worker's own load reports it
   */
  static void requireImports(String interpreter, Path modelDir, Map<String, String> env, String uri) {
    Result own = run(interpreter, modelDir, env, List.of("numpy"));
    if (own == null || own.missing().isEmpty()) {
      return;
    }
    throw new ModelLoadException(missingMessage(uri, interpreter, own, env));
  }

  /**
   * The message for {@code modules} missing in {@code interpreter} (also for a {@code ModuleNotFoundError} the model
   * raised while loading), with the interpreters on this machine that have them all.
   */
  static String missingMessage(String uri, String interpreter, Result own, Map<String, String> env) {
    List<String> have = new ArrayList<>();
    Set<String> executables = new java.util.HashSet<>(); // the same binary under two names is named once
    for (Path candidate : candidates(env)) {
      Result r = run(candidate.toString(), null, env, own.missing());
      if (r != null && r.missing().isEmpty() && executables.add(r.executable())) {
        have.add(candidate + " (Python " + r.version() + ")");
      }
    }
    String modules = String.join(", ", own.missing());
    boolean one = own.missing().size() == 1;
    return "model " + uri + ": the Python interpreter '" + interpreter + "' (" + own.executable() + ", Python "
        + own.version() + ") has no module " + modules + ", which " + (own.missing().contains("numpy")
        && one ? "Kiln's worker needs" : "model.py imports") + "; "
        + (have.isEmpty() ? "no other python3 on this machine's PATH has " + (one ? "it" : "them all")
        + ": install " + (one ? "it" : "them") + " for " + own.executable()
        : "on this machine " + String.join(", ", have) + " ha" + (have.size() == 1 ? "s " : "ve ")
        + (one ? "it" : "them all") + ": set the model's python.interpreter to " + (have.size() == 1 ? "it" : "one")
        + ", or install " + (one ? "it" : "them") + " for " + own.executable());
  }

  /** What {@code interpreter} lacks of {@code modules}, for a load that failed on one; null if it cannot tell. */
  static Result check(String interpreter, Map<String, String> env, List<String> modules) {
    return check(interpreter, env, modules, CHECK_TIMEOUT);
  }

  /** {@link #check} bounded by {@code timeout}: an interpreter that does not exit by then tells nothing (null). */
  static Result check(String interpreter, Map<String, String> env, List<String> modules, Duration timeout) {
    return run(interpreter, null, env, modules, timeout);
  }

  /** One interpreter's answer: its real executable, version, and the modules it lacks. */
  record Result(String executable, String version, List<String> missing) {
  }

  private static Result run(String interpreter, Path modelDir, Map<String, String> env, List<String> modules) {
    return run(interpreter, modelDir, env, modules, CHECK_TIMEOUT);
  }

  private static Result run(String interpreter, Path modelDir, Map<String, String> env, List<String> modules,
                            Duration timeout) {
    List<String> command = new ArrayList<>(List.of(interpreter, "-B", "-c", SCRIPT,
        modelDir == null ? "" : modelDir.toString()));
    command.addAll(modules);
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(false)
        .redirectError(ProcessBuilder.Redirect.DISCARD);
    if (modelDir != null) {
      pb.directory(modelDir.toFile());
    }
    pb.environment().putAll(env);
    Process p = null;
    Path outFile = null;
    try {
      // Its answer goes to a file, not a pipe: reading a pipe until it closes waits for every process holding its
      // end (an interpreter that forks, or one that prints and hangs) past the timeout, which bounds only waitFor.
      outFile = Files.createTempFile("kiln-python-modules", ".json");
      p = pb.redirectOutput(outFile.toFile()).start();
      p.getOutputStream().close();
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) || p.exitValue() != 0) {
        return null;
      }
      byte[] out;
      try (var in = Files.newInputStream(outFile)) {
        out = in.readNBytes(1 << 16);
      }
      JsonNode j = PythonFrames.json().readTree(new String(out, StandardCharsets.UTF_8).trim());
      List<String> missing = new ArrayList<>();
      j.path("missing").forEach(m -> missing.add(m.asText()));
      return new Result(j.path("executable").asText(interpreter), j.path("version").asText("?"), missing);
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } finally {
      if (p != null) {
        p.destroyForcibly();
      }
      if (outFile != null) {
        try {
          Files.deleteIfExists(outFile);
        } catch (IOException e) {
          // a temporary file left behind; nothing to tell the load
        }
      }
    }
  }

  // Every python3 / python3.N on the PATH the worker sees, and Debian's, each real file once.
  private static List<Path> candidates(Map<String, String> env) {
    Set<Path> real = new LinkedHashSet<>();
    Map<Path, Path> shown = new LinkedHashMap<>();
    List<Path> dirs = new ArrayList<>();
    String path = env.getOrDefault("PATH", System.getenv().getOrDefault("PATH", ""));
    for (String d : path.split(File.pathSeparator)) {
      if (!d.isEmpty()) {
        dirs.add(Path.of(d));
      }
    }
    dirs.add(Path.of("/usr/bin"));
    dirs.add(Path.of("/usr/local/bin"));
    for (Path d : dirs) {
      if (!Files.isDirectory(d)) {
        continue;
      }
      try (DirectoryStream<Path> files = Files.newDirectoryStream(d)) {
        for (Path f : files) {
          if (PYTHON_NAME.matcher(f.getFileName().toString()).matches() && Files.isExecutable(f)) {
            Path r = f.toRealPath();
            if (real.add(r)) {
              shown.put(r, f);
            }
          }
        }
      } catch (IOException | SecurityException e) {
        // an unreadable PATH entry holds no candidate
      }
    }
    return new ArrayList<>(shown.values());
  }
}
