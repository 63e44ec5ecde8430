package io.kiln.pipelines.jobs;

import io.kiln.pipelines.InputFormat;
import io.kiln.pipelines.StepAction;
import io.kiln.runtime.RetryPolicy;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A batch job: run every input of a dataset through one deployment (each input fetched and analysed on one
 * node) or one pipeline (each input one run), writing one result per input into {@code output}. Immutable;
 * validated on construction (the {@link JobLoader} reports the same rules with line and column first).
 *
 * @param name the job's name ({@code [a-z0-9][a-z0-9-]*}, at most 63 characters)
 * @param deployment the deployment every input goes through; empty when {@code pipeline} is set
 * @param pipeline the pipeline every input runs; empty when {@code deployment} is set
 * @param inputField the pipeline input field the URI fills (default {@code uri})
 * @param format how a fetched file becomes the model's input tensors
 * @param tensor the model input a {@link InputFormat#RAW} file fills; empty for the model's only input
 * @param inputs the dataset: {@code file://}, {@code http://} or {@code https://} URIs, distinct
 * @param output absolute path of the folder results are written to (on the coordinating node's filesystem)
 * @param maxInFlight inputs of this job being fetched or analysed at once, cluster-wide
 * @param perNode inputs of this job in flight on one node at once
 * @param priority whether the job yields to online traffic ({@link Priority#LOW}, the default)
 * @param retries attempts after the first for an input that failed (node losses do not count)
 * @param maxBytes largest input fetched
 * @param timeoutMs how long one attempt of one input may take
 */
public record JobSpec(String name, String deployment, String pipeline, String inputField, InputFormat format,
                      String tensor, List<String> inputs, String output, int maxInFlight, int perNode,
                      Priority priority, int retries, long maxBytes, long timeoutMs) {

  /** Inputs per job at most. */
  public static final int MAX_INPUTS = 1_000_000;
  /** Longest input URI. */
  public static final int MAX_URI_CHARS = 4096;
  public static final int DEFAULT_MAX_IN_FLIGHT = 64;
  public static final int MAX_IN_FLIGHT = 4096;
  public static final int DEFAULT_PER_NODE = 8;
  public static final int MAX_PER_NODE = 1024;
  /** {@link RetryPolicy#JOB_INPUT_RETRY}'s: an input is tried 3 times in all. */
  public static final int DEFAULT_RETRIES = RetryPolicy.JOB_INPUT_RETRY.maxRetries();
  public static final int MAX_RETRIES = 20;
  public static final long DEFAULT_MAX_BYTES = StepAction.DEFAULT_FETCH_MAX_BYTES;
  public static final long DEFAULT_TIMEOUT_MS = 60_000;
  public static final String DEFAULT_INPUT_FIELD = "uri";

  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");

  /** How a job shares the pools with online requests. */
  public enum Priority {
    /**
     * Online first: on each node the job keeps in flight only what the pool's spare room allows (its
     * per-node cap less the online requests the load board shows outstanding there), at least one.
     */
    LOW("low"),
    /** As online traffic: the job fills its per-node cap whatever else the pool serves. */
    NORMAL("normal");

    private final String spelling;

    Priority(String spelling) {
      this.spelling = spelling;
    }

    public String spelling() {
      return spelling;
    }

    public static Priority parse(String s) {
      for (Priority p : values()) {
        if (p.spelling.equals(s)) {
          return p;
        }
      }
      throw new IllegalArgumentException("priority must be low or normal, got '" + s + "'");
    }
  }

  public JobSpec {
    Objects.requireNonNull(name, "name");
    deployment = deployment == null ? "" : deployment;
    pipeline = pipeline == null ? "" : pipeline;
    inputField = inputField == null || inputField.isEmpty() ? DEFAULT_INPUT_FIELD : inputField;
    Objects.requireNonNull(format, "format");
    tensor = tensor == null ? "" : tensor;
    inputs = List.copyOf(inputs);
    Objects.requireNonNull(output, "output");
    Objects.requireNonNull(priority, "priority");
    String problem = nameProblem(name);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    if (deployment.isEmpty() == pipeline.isEmpty()) {
      throw new IllegalArgumentException("a job runs either a deployment or a pipeline");
    }
    if (inputs.isEmpty() || inputs.size() > MAX_INPUTS) {
      throw new IllegalArgumentException("a job has 1 to " + MAX_INPUTS + " inputs, got " + inputs.size());
    }
    if (output.isEmpty()) {
      throw new IllegalArgumentException("output must name a folder");
    }
    if (maxInFlight < 1 || maxInFlight > MAX_IN_FLIGHT || perNode < 1 || perNode > MAX_PER_NODE) {
      throw new IllegalArgumentException("max_in_flight must be 1.." + MAX_IN_FLIGHT + " and per_node 1.."
          + MAX_PER_NODE);
    }
    if (retries < 0 || retries > MAX_RETRIES || maxBytes < 1 || timeoutMs < 1) {
      throw new IllegalArgumentException("retries must be 0.." + MAX_RETRIES + ", max_bytes and timeout_ms positive");
    }
  }

  /** Why {@code name} is not a valid job name, or null. */
  public static String nameProblem(String name) {
    return NAME.matcher(name).matches() ? null
        : "job name '" + name + "' must be lower-case letters, digits and '-', starting with a letter or digit,"
            + " at most 63 characters";
  }

  /** What every input goes through, for people: {@code deployment mlp} or {@code pipeline media}. */
  public String target() {
    return deployment.isEmpty() ? "pipeline " + pipeline : "deployment " + deployment;
  }
}
