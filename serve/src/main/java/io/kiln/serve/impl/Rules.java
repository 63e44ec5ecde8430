package io.kiln.serve.impl;

import io.kiln.serve.ModelEngine;
import io.kiln.serve.ModelFormat;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The value rules of the deployment schema, written once: each check returns {@code null} when the value
 * is fine, otherwise a message without the field name. The YAML reader reports these messages with a
 * position; the records' constructors throw them as {@link IllegalArgumentException} (see
 * {@link #require}), so a spec built in code obeys the same rules as one loaded from a file.
 */
public final class Rules {

  /** DNS-label-like: it becomes part of actor names, metric labels and URLs. */
  private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
  /** No '/', '@' or blanks: the version is part of actor names ({@code kiln/pool/<name>@<version>/...}). */
  private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,31}");
  private static final Pattern BUILTIN = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");

  /** Longest delay or timeout accepted, so that millisecond arithmetic never overflows. */
  public static final Duration MAX_DURATION = Duration.ofDays(1);
  /** Highest tensor rank accepted. */
  public static final int MAX_RANK = 32;

  private Rules() {
  }

  /** Throws {@link IllegalArgumentException} with {@code field + " " + message} if the check failed. */
  public static void require(String field, String message) {
    if (message != null) {
      throw new IllegalArgumentException(field + " " + message);
    }
  }

  public static String name(String name) {
    if (NAME.matcher(name).matches()) {
      return null;
    }
    return "'" + name + "' is not a valid name: use 1 to 63 lowercase letters, digits and '-', "
        + "starting and ending with a letter or digit";
  }

  public static String version(String version) {
    if (VERSION.matcher(version).matches()) {
      return null;
    }
    return "'" + version + "' is not a valid version: use 1 to 32 letters, digits, '.', '_' or '-', "
        + "starting with a letter or digit";
  }

  public static String builtinName(String name) {
    if (BUILTIN.matcher(name).matches()) {
      return null;
    }
    return "'builtin:" + name + "' is not a valid builtin model: use builtin:<name> with lowercase letters, "
        + "digits, '_' or '-'";
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
      return "must not be negative, got " + Durations.millisText(d);
    }
    return atMostDay(d);
  }

  public static String positive(Duration d) {
    if (d.isNegative() || d.isZero()) {
      return "must be greater than 0, got " + Durations.millisText(d);
    }
    return atMostDay(d);
  }

  private static String atMostDay(Duration d) {
    return d.compareTo(MAX_DURATION) <= 0 ? null
        : "must be at most " + MAX_DURATION.toMillis() + " (one day), got " + Durations.millisText(d);
  }

  public static String notBlank(String s) {
    return s.isBlank() ? "must not be empty" : null;
  }

  /** Checks one dimension of a tensor shape. */
  public static String dimension(long d) {
    return d >= -1 ? null : "must be -1 (any size) or >= 0, got " + d;
  }

  public static String rank(int rank) {
    if (rank == 0) {
      return "must have at least one dimension";
    }
    return rank <= MAX_RANK ? null : "has " + rank + " dimensions; at most " + MAX_RANK + " are supported";
  }

  public static String batchWithinQueue(int maxBatchSize, int maxQueued) {
    return maxBatchSize <= maxQueued ? null
        : "max_batch_size " + maxBatchSize + " exceeds queue.max_queued " + maxQueued
            + ": a batch could never fill";
  }

  public static String minWithinMax(int minWorkers, int maxWorkers) {
    return minWorkers <= maxWorkers ? null
        : "min_workers " + minWorkers + " exceeds max_workers " + maxWorkers;
  }

  public static String warmupWithinBatch(int batchSize, int maxBatchSize) {
    return batchSize <= maxBatchSize ? null
        : "warmup batch size " + batchSize + " exceeds batching.max_batch_size " + maxBatchSize
            + ": such a batch never runs";
  }

  public static String timeoutWithinPeriod(Duration timeout, Duration period) {
    return timeout.compareTo(period) <= 0 ? null
        : "timeout_ms " + Durations.millisText(timeout) + " exceeds period_ms " + Durations.millisText(period)
            + ": a check would still run when the next one starts";
  }

  /** The prefix of URIs naming a model built into Kiln. */
  public static final String BUILTIN_PREFIX = "builtin:";

  /** Whether {@code uri} and {@code engine} agree: builtin URIs go with the Builtin engine only. */
  public static String engineMatchesUri(ModelEngine engine, String uri) {
    boolean builtinUri = uri.startsWith(BUILTIN_PREFIX);
    if (engine == ModelEngine.BUILTIN && !builtinUri) {
      return "engine Builtin needs a uri of the form builtin:<name>, e.g. builtin:identity";
    }
    if (engine != ModelEngine.BUILTIN && builtinUri) {
      return "'" + uri + "' names a builtin model; set engine: Builtin";
    }
    return null;
  }

  /** Whether a declared format and architecture make sense together for {@code engine}. */
  public static String formatFits(ModelEngine engine, Optional<ModelFormat> format) {
    if (format.isPresent() && engine != ModelEngine.PYTORCH) {
      return "format applies to the PyTorch engine only";
    }
    return null;
  }

  public static String architectureFits(Optional<ModelFormat> format, Optional<String> architecture) {
    if (architecture.isPresent() && format.orElse(null) == ModelFormat.TORCHSCRIPT) {
      return "architecture is only used with format: djl-params (TorchScript files carry their own)";
    }
    if (architecture.isEmpty() && format.orElse(null) == ModelFormat.DJL_PARAMS) {
      return "format djl-params needs an architecture: DJL parameters hold weights, not the network";
    }
    return null;
  }

  public static String uniqueTensor(String kind, String name, int firstIndex) {
    return "duplicate " + kind + " name '" + name + "' (also " + kind + "s[" + firstIndex + "])";
  }

  /** per_gpu workers must each ask for a share of one GPU that {@code perGpu} of them can share. */
  public static String perGpuResources(int perGpu, long gpuUnits, long unitsPerGpu) {
    if (gpuUnits == 0) {
      return "per_gpu needs worker_resources to ask for a GPU share, e.g. {GPU: 1}";
    }
    if (perGpu * gpuUnits > unitsPerGpu) {
      double share = gpuUnits / (double) unitsPerGpu;
      return "per_gpu: " + perGpu + " workers each asking GPU: " + trim(share) + " cannot share one GPU; "
          + "ask for at most GPU: " + trim(Math.floor(unitsPerGpu / (double) perGpu) / unitsPerGpu);
    }
    return null;
  }

  public static String workersCoverMin(int minWorkers, int workersPerNode) {
    return minWorkers <= workersPerNode ? null
        : "min_workers " + minWorkers + " exceeds pool.workers_per_node " + workersPerNode;
  }

  private static String trim(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }
}
