package io.kiln.serve.impl;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.SpecRules;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * The value rules of the deployment schema, written once: each check returns {@code null} when the value
 * is fine, otherwise a message without the field name. The YAML reader reports these messages with a
 * position; the records' constructors throw them as {@link IllegalArgumentException} (see
 * {@link #require}), so a spec built in code obeys the same rules as one loaded from a file. The rules of
 * the sections model-pools owns (model, batching, queue, health) are {@link SpecRules}'; they are
 * re-exported here so that the reader has one place to look.
 */
public final class Rules {

  /** DNS-label-like: it becomes part of actor names, metric labels and URLs. */
  private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
  /** No '/', '@' or blanks: the version is part of actor names ({@code kiln/pool/<name>@<version>/...}). */
  private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,31}");
  private static final Pattern BUILTIN = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");

  /** Longest delay or timeout accepted, so that millisecond arithmetic never overflows. */
  public static final Duration MAX_DURATION = SpecRules.MAX_DURATION;
  /** Highest tensor rank accepted. */
  public static final int MAX_RANK = SpecRules.MAX_RANK;

  private Rules() {
  }

  /** Throws {@link IllegalArgumentException} with {@code field + " " + message} if the check failed. */
  public static void require(String field, String message) {
    SpecRules.require(field, message);
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
    return SpecRules.atLeast(value, min);
  }

  public static String atMost(long value, long max) {
    return SpecRules.atMost(value, max);
  }

  public static String positive(double value) {
    return SpecRules.positive(value);
  }

  public static String notNegative(Duration d) {
    return SpecRules.notNegative(d);
  }

  public static String positive(Duration d) {
    return SpecRules.positive(d);
  }

  public static String notBlank(String s) {
    return SpecRules.notBlank(s);
  }

  /** Checks one dimension of a tensor shape. */
  public static String dimension(long d) {
    return SpecRules.dimension(d);
  }

  public static String rank(int rank) {
    return SpecRules.rank(rank);
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
    return SpecRules.timeoutWithinPeriod(timeout, period);
  }

  /** The prefix of URIs naming a model built into Kiln. */
  public static final String BUILTIN_PREFIX = ModelSpec.BUILTIN_PREFIX;

  public static String engineMatchesUri(String engine, String uri) {
    return SpecRules.engineMatchesUri(engine, uri);
  }

  public static String formatFits(String engine, String format) {
    return SpecRules.formatFits(engine, format);
  }

  public static String architectureFits(String format, String architecture) {
    return SpecRules.architectureFits(format, architecture);
  }

  public static String uniqueTensor(String kind, String name, int firstIndex) {
    return SpecRules.uniqueTensor(kind, name, firstIndex);
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
