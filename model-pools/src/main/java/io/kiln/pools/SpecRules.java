package io.kiln.pools;

import java.math.BigDecimal;
import java.time.Duration;

/**
 * The value rules of the pool specs ({@link ModelSpec}, {@link BatchingSpec}, {@link QueueSpec},
 * {@link HealthSpec}), written once: each check returns {@code null} when the value is fine, otherwise a
 * message without the field name. The records throw these messages as {@link IllegalArgumentException}
 * (see {@link #require}); serve's YAML reader reports the same messages with a line and column, so a spec
 * built in code and one loaded from a file are judged alike. Stateless.
 */
public final class SpecRules {

  /** Longest delay or timeout accepted, so that millisecond arithmetic never overflows. */
  public static final Duration MAX_DURATION = Duration.ofDays(1);
  /** Highest tensor rank accepted. */
  public static final int MAX_RANK = 32;

  private SpecRules() {
  }

  /** Throws {@link IllegalArgumentException} with {@code field + " " + message} if the check failed. */
  public static void require(String field, String message) {
    if (message != null) {
      throw new IllegalArgumentException(field + " " + message);
    }
  }

  public static String atLeast(long value, long min) {
    return value >= min ? null : "must be at least " + min + ", got " + value;
  }

  public static String atMost(long value, long max) {
    return value <= max ? null : "must be at most " + max + ", got " + value;
  }

  public static String positive(double value) {
    return value > 0 && Double.isFinite(value) ? null : "must be a number greater than 0, got " + value;
  }

  public static String notNegative(Duration d) {
    if (d.isNegative()) {
      return "must not be negative, got " + millisText(d);
    }
    return atMostDay(d);
  }

  public static String positive(Duration d) {
    if (d.isNegative() || d.isZero()) {
      return "must be greater than 0, got " + millisText(d);
    }
    return atMostDay(d);
  }

  private static String atMostDay(Duration d) {
    return d.compareTo(MAX_DURATION) <= 0 ? null
        : "must be at most " + MAX_DURATION.toMillis() + " (one day), got " + millisText(d);
  }

  public static String notBlank(String s) {
    return s.isBlank() ? "must not be empty" : null;
  }

  /** Checks one dimension of a declared tensor shape. */
  public static String dimension(long d) {
    return d >= -1 ? null : "must be -1 (any size) or >= 0, got " + d;
  }

  public static String rank(int rank) {
    if (rank == 0) {
      return "must have at least one dimension";
    }
    return rank <= MAX_RANK ? null : "has " + rank + " dimensions; at most " + MAX_RANK + " are supported";
  }

  public static String uniqueTensor(String kind, String name, int firstIndex) {
    return "duplicate " + kind + " name '" + name + "' (also " + kind + "s[" + firstIndex + "])";
  }

  public static String timeoutWithinPeriod(Duration timeout, Duration period) {
    return timeout.compareTo(period) <= 0 ? null
        : "timeout_ms " + millisText(timeout) + " exceeds period_ms " + millisText(period)
            + ": a check would still run when the next one starts";
  }

  /** Whether {@code uri} and {@code engine} agree: builtin URIs go with the Builtin engine only. */
  public static String engineMatchesUri(String engine, String uri) {
    boolean builtinUri = uri.startsWith(ModelSpec.BUILTIN_PREFIX);
    boolean builtinEngine = ModelSpec.ENGINE_BUILTIN.equals(engine);
    if (builtinEngine && !builtinUri) {
      return "engine Builtin needs a uri of the form builtin:<name>, e.g. builtin:identity";
    }
    if (!builtinEngine && builtinUri) {
      return "'" + uri + "' names a builtin model; set engine: Builtin";
    }
    return null;
  }

  /** Whether a declared format (not {@value ModelSpec#FORMAT_AUTO}) makes sense for {@code engine}. */
  public static String formatFits(String engine, String format) {
    if (!ModelSpec.FORMAT_AUTO.equals(format) && !ModelSpec.ENGINE_PYTORCH.equals(engine)) {
      return "format applies to the PyTorch engine only";
    }
    return null;
  }

  /** Whether a declared format and architecture (empty: none) make sense together. */
  public static String architectureFits(String format, String architecture) {
    if (!architecture.isEmpty() && ModelSpec.FORMAT_TORCHSCRIPT.equals(format)) {
      return "architecture is only used with format: djl-params (TorchScript files carry their own)";
    }
    if (architecture.isEmpty() && ModelSpec.FORMAT_DJL_PARAMS.equals(format)) {
      return "format djl-params needs an architecture: DJL parameters hold weights, not the network";
    }
    return null;
  }

  /**
   * Whether a model may declare {@code streaming: true}: a Python model (its class then needs
   * {@code predict_stream}) or a streaming built-in; engines that run one forward pass per batch cannot.
   */
  public static String streamingFits(String engine, String uri, boolean streaming) {
    if (!streaming || ModelSpec.ENGINE_PYTHON.equals(engine)) {
      return null;
    }
    if (ModelSpec.ENGINE_BUILTIN.equals(engine)) {
      return io.kiln.pools.impl.BuiltinModels.STREAMING.contains(uri) ? null
          : "'" + uri + "' does not stream; the streaming built-ins are " + io.kiln.pools.impl.BuiltinModels.STREAMING;
    }
    return "applies to engines " + ModelSpec.ENGINE_PYTHON + " (a class with predict_stream) and "
        + ModelSpec.ENGINE_BUILTIN + " (" + io.kiln.pools.impl.BuiltinModels.STREAMING + "), not " + engine;
  }

  /**
   * Whether a model of {@code engine} can sit under a repository's memory cap ({@code max_memory_mb}): its runner
   * reports the memory it holds ({@link ModelRunner#memoryBytes()}). {@value ModelSpec#ENGINE_ONNX}: the model file's
   * size (its weights); {@value ModelSpec#ENGINE_PYTHON}: the resident memory of the worker's Python process;
   * {@value ModelSpec#ENGINE_BUILTIN}: 0 (the built-ins hold no weights). DJL's {@value ModelSpec#ENGINE_PYTORCH}
   * cannot say what a model holds in libtorch's native memory, so a cap over it is refused rather than ignored.
   *
   * @return null if it reports, else why not
   */
  public static String reportsMemory(String engine) {
    if (ModelSpec.ENGINE_ONNX.equals(engine) || ModelSpec.ENGINE_PYTHON.equals(engine)
        || ModelSpec.ENGINE_BUILTIN.equals(engine)) {
      return null;
    }
    return "engine " + engine + " does not report the memory a model holds, so max_memory_mb cannot be enforced"
        + " over it (engines that do: " + ModelSpec.ENGINE_ONNX + ", " + ModelSpec.ENGINE_PYTHON + ", "
        + ModelSpec.ENGINE_BUILTIN + "); drop max_memory_mb and cap by max_models_per_worker";
  }

  /** Milliseconds as plain decimal text without trailing zeros ({@code 2}, {@code 0.5}). */
  public static String millisText(Duration d) {
    BigDecimal ms = new BigDecimal(d.toNanos()).divide(BigDecimal.valueOf(1_000_000)).stripTrailingZeros();
    return (ms.scale() < 0 ? ms.setScale(0) : ms).toPlainString();
  }
}
