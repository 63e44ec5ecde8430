package io.kiln.pools;

import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.Engines;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

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

  /** Checks a declared tensor's rank: 0 (a scalar, {@code shape: []}) up to {@link #MAX_RANK}. */
  public static String rank(int rank) {
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

  /**
   * Whether a declared format (not {@value ModelSpec#FORMAT_AUTO}) makes sense for {@code engine}: one of its
   * {@link Engine.Capabilities#formats()}.
   */
  public static String formatFits(String engine, String format) {
    if (ModelSpec.FORMAT_AUTO.equals(format)
        || Engines.installed().find(engine).map(e -> e.capabilities().formats().contains(format)).orElse(false)) {
      return null;
    }
    List<String> takers = engines(c -> !c.formats().isEmpty());
    return "format applies to the " + and(takers) + " engine" + (takers.size() == 1 ? "" : "s") + " only";
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
   * Whether a model may declare {@code streaming: true}: its engine streams ({@link Engine.Capabilities#streams()},
   * e.g. a Python model whose class has {@code predict_stream}) and its own rules take the uri (only the streaming
   * built-ins stream); engines that run one forward pass per batch cannot.
   */
  public static String streamingFits(String engine, String uri, boolean streaming) {
    Engine e = Engines.installed().find(engine).orElse(null);
    if (!streaming || e == null) {
      return null;
    }
    if (e.capabilities().streams()) {
      return e.check(SpecFields.streaming(uri)).stream().filter(p -> p.field().equals("streaming"))
          .map(SpecProblem::message).findFirst().orElse(null);
    }
    List<String> streamers = Engines.installed().all().stream().filter(o -> o.capabilities().streams())
        .map(o -> o.name() + " (" + o.capabilities().streaming() + ")").toList();
    return "applies to engines " + and(streamers) + ", not " + engine;
  }

  /**
   * Whether a model of {@code engine} can sit under a repository's memory cap ({@code max_memory_mb}): its runner
   * reports the memory it holds ({@link ModelRunner#memoryBytes()}, {@link Engine.Capabilities#reportsMemory()}).
   * Each engine's class says what it counts; a cap over an engine that cannot tell is refused rather than ignored.
   *
   * @return null if it reports, else why not
   */
  public static String reportsMemory(String engine) {
    if (Engines.installed().find(engine).map(e -> e.capabilities().reportsMemory()).orElse(false)) {
      return null;
    }
    return "engine " + engine + " does not report the memory a model holds, so max_memory_mb cannot be enforced"
        + " over it (engines that do: " + String.join(", ", engines(Engine.Capabilities::reportsMemory))
        + "); drop max_memory_mb and cap by max_models_per_worker";
  }

  private static List<String> engines(Predicate<Engine.Capabilities> can) {
    return Engines.installed().all().stream().filter(e -> can.test(e.capabilities())).map(Engine::name).toList();
  }

  /** {@code a}, {@code a and b}, {@code a, b and c}. */
  private static String and(List<String> items) {
    return items.size() <= 1 ? String.join("", items)
        : String.join(", ", items.subList(0, items.size() - 1)) + " and " + items.get(items.size() - 1);
  }

  /** Milliseconds as plain decimal text without trailing zeros ({@code 2}, {@code 0.5}). */
  public static String millisText(Duration d) {
    BigDecimal ms = new BigDecimal(d.toNanos()).divide(BigDecimal.valueOf(1_000_000)).stripTrailingZeros();
    return (ms.scale() < 0 ? ms.setScale(0) : ms).toPlainString();
  }
}
