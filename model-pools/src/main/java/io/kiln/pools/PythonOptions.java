package io.kiln.pools;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a {@value ModelSpec#ENGINE_PYTHON} model is run: the interpreter each worker starts, the class in
 * the model folder's {@code model.py} to instantiate, the settings handed to its {@code load}, extra
 * environment, and how long start-up and one batch may take. Immutable and validated on construction
 * ({@link IllegalArgumentException} with a message naming the field, prefixed {@code python.}).
 *
 * <pre>{@code PythonOptions.builder().interpreter("/opt/venv").className("Classifier")
 *     .config(Map.of("threshold", 0.5)).requestTimeout(Duration.ofSeconds(5)).build()}</pre>
 *
 * @param interpreter a command looked up on the node's {@code PATH} (default {@value #DEFAULT_INTERPRETER}), the
 *     path of an interpreter, or the folder of a virtualenv (its {@code bin/python3} is used)
 * @param className the class in {@code model.py} to instantiate with no arguments (default {@value #DEFAULT_CLASS})
 * @param config user settings passed to {@code load(self, config, device)} as a dict: JSON-like values only
 *     (strings, numbers, booleans, lists and maps of them)
 * @param env environment variables added to the process; {@code CUDA_VISIBLE_DEVICES} is Kiln's (it is set
 *     to the worker's GPUs) and may not be given; {@code OMP_NUM_THREADS}/{@code MKL_NUM_THREADS} given here
 *     win over the spec's {@code intraOpThreads}
 * @param startupTimeout from starting the process until the model is loaded and its own {@code warmup} ran
 * @param requestTimeout how long one batch may take; past it the process is killed and the worker fails
 */
public record PythonOptions(String interpreter, String className, Map<String, Object> config, Map<String, String> env,
                            Duration startupTimeout, Duration requestTimeout) {

  public static final String DEFAULT_INTERPRETER = "python3";
  public static final String DEFAULT_CLASS = "Model";
  public static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofMinutes(5);
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(30);
  /** Upper bound on both timeouts: larger values are configuration mistakes. */
  public static final Duration MAX_TIMEOUT = Duration.ofHours(1);
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  /** Set by Kiln from the worker's GPU allocation, never by the user. */
  public static final String CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES";
  // After the patterns: building it runs the checks.
  public static final PythonOptions DEFAULTS = builder().build();


  public PythonOptions {
    interpreter = interpreter == null || interpreter.isBlank() ? DEFAULT_INTERPRETER : interpreter.trim();
    className = className == null || className.isBlank() ? DEFAULT_CLASS : className.trim();
    if (!IDENTIFIER.matcher(className).matches()) {
      throw new IllegalArgumentException("python.class: '" + className + "' is not a Python class name");
    }
    config = config == null ? Map.of() : copyConfig(config);
    env = env == null ? Map.of() : copyEnv(env);
    startupTimeout = checkTimeout("python.startup_timeout", startupTimeout == null ? DEFAULT_STARTUP_TIMEOUT : startupTimeout);
    requestTimeout = checkTimeout("python.request_timeout", requestTimeout == null ? DEFAULT_REQUEST_TIMEOUT : requestTimeout);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding these values, for changing a few of them. */
  public Builder toBuilder() {
    return new Builder().interpreter(interpreter).className(className).config(config).env(env)
        .startupTimeout(startupTimeout).requestTimeout(requestTimeout);
  }

  private static Duration checkTimeout(String field, Duration d) {
    if (d.isNegative() || d.isZero() || d.compareTo(MAX_TIMEOUT) > 0) {
      throw new IllegalArgumentException(field + ": must be above 0 and at most " + MAX_TIMEOUT.toMinutes()
          + " minutes, got " + d.toMillis() + " ms");
    }
    return d;
  }

  private static Map<String, Object> copyConfig(Map<String, Object> config) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : config.entrySet()) {
      if (e.getKey() == null || e.getKey().isBlank()) {
        throw new IllegalArgumentException("python.config: keys must not be blank");
      }
      out.put(e.getKey(), jsonValue("python.config." + e.getKey(), e.getValue()));
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  // The config crosses to Python as JSON: refuse anything JSON cannot say now, not in the worker.
  private static Object jsonValue(String field, Object v) {
    if (v == null || v instanceof String || v instanceof Boolean || v instanceof Number) {
      if (v instanceof Double d && !Double.isFinite(d) || v instanceof Float f && !Float.isFinite(f)) {
        throw new IllegalArgumentException(field + ": " + v + " has no JSON form");
      }
      return v;
    }
    if (v instanceof List<?> list) {
      List<Object> out = new ArrayList<>(list.size());
      for (int i = 0; i < list.size(); i++) {
        out.add(jsonValue(field + "[" + i + "]", list.get(i)));
      }
      return java.util.Collections.unmodifiableList(out);
    }
    if (v instanceof Map<?, ?> map) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!(e.getKey() instanceof String k)) {
          throw new IllegalArgumentException(field + ": keys must be strings, got " + e.getKey());
        }
        out.put(k, jsonValue(field + "." + k, e.getValue()));
      }
      return java.util.Collections.unmodifiableMap(out);
    }
    throw new IllegalArgumentException(field + ": a " + v.getClass().getSimpleName()
        + " is not a string, number, boolean, list or map");
  }

  private static Map<String, String> copyEnv(Map<String, String> env) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : env.entrySet()) {
      String name = e.getKey();
      if (name == null || !ENV_NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("python.env: '" + name + "' is not an environment variable name");
      }
      if (name.equals(CUDA_VISIBLE_DEVICES)) {
        throw new IllegalArgumentException("python.env: " + CUDA_VISIBLE_DEVICES + " is set by Kiln to the worker's"
            + " GPUs; request GPUs in the pool's worker_resources instead");
      }
      out.put(name, Objects.requireNonNull(e.getValue(), () -> "python.env." + name + ": null value"));
    }
    return Map.copyOf(out);
  }

  /** Collects {@link PythonOptions}; every value left unset takes its default. */
  public static final class Builder {
    private String interpreter = DEFAULT_INTERPRETER;
    private String className = DEFAULT_CLASS;
    private Map<String, Object> config = Map.of();
    private Map<String, String> env = Map.of();
    private Duration startupTimeout = DEFAULT_STARTUP_TIMEOUT;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;

    private Builder() {
    }

    public Builder interpreter(String interpreter) {
      this.interpreter = interpreter;
      return this;
    }

    public Builder className(String className) {
      this.className = className;
      return this;
    }

    public Builder config(Map<String, Object> config) {
      this.config = config;
      return this;
    }

    public Builder env(Map<String, String> env) {
      this.env = env;
      return this;
    }

    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = checkTimeout("python.startup_timeout", Objects.requireNonNull(timeout, "startupTimeout"));
      return this;
    }

    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = checkTimeout("python.request_timeout", Objects.requireNonNull(timeout, "requestTimeout"));
      return this;
    }

    /** @throws IllegalArgumentException naming the first field that is wrong */
    public PythonOptions build() {
      return new PythonOptions(interpreter, className, config, env, startupTimeout, requestTimeout);
    }
  }
}
