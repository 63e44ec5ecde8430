package io.kiln.loadtest;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * The outcome of one load test, as written to the JSON summary. Immutable; latencies are in
 * milliseconds, times in seconds from the start of measurement.
 *
 * <p>Every measured request is counted exactly once in {@code outcomes}: {@code http:<status>},
 * {@code grpc:<STATUS>} (or, with a {@link ResponseCheck}, the check's key), {@code timeout},
 * {@code connection_error}, or {@code unfinished} (still unanswered, or never sent, when the run ended). The latency distribution covers every outcome except
 * {@code connection_error}; for {@code timeout} and {@code unfinished} the recorded value is the time
 * waited so far, a lower bound.
 *
 * @param latencyFrom   {@code intended} (open loop: from the time the request was due, which corrects
 *                      coordinated omission) or {@code sent} (closed loop: from the actual send)
 * @param measuredSeconds from the start of measurement to the last measured request's end
 * @param requests      measured requests, all outcomes
 * @param ok            2xx / gRPC OK
 * @param achievedRps   {@code requests / measuredSeconds}
 * @param offeredRps    the open-loop arrival rate; null in closed loop
 * @param series        one sample per second of measurement (the last may be shorter)
 * @param distribution  latency by percentile, for "nines" plots
 * @param latencyByOutcome the latency summary of each outcome key's requests (those with a latency)
 * @param examples      per outcome key, why its requests ended so, by kind: a {@link ResponseCheck}'s examples, or
 *                      a transport failure's cause; at most {@link #MAX_EXAMPLES} kinds per key, then
 *                      {@code (other)}
 * @param llm           an LLM run's figures ({@link LlmWorkload}); null (and absent from the JSON) for other runs
 */
public record RunResult(String name, Map<String, Object> config, String startedAt, String latencyFrom,
    double measuredSeconds, long requests, long ok, long errors, double achievedRps, double okRps,
    Double offeredRps, Latency latencyMs, Map<String, Long> outcomes, List<Sample> series,
    List<PercentilePoint> distribution, Map<String, Latency> latencyByOutcome, Map<String, Map<String, Long>> examples,
    @JsonInclude(JsonInclude.Include.NON_NULL) Llm llm) {

  /** Distinct examples kept per outcome key; later kinds are counted under {@code (other)}. */
  public static final int MAX_EXAMPLES = 16;

  public RunResult {
    // Immutable and canonical (sorted outcomes), whether built by a run or read back from JSON.
    config = config == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(config));
    outcomes = outcomes == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(outcomes));
    series = series == null ? List.of() : List.copyOf(series);
    distribution = distribution == null ? List.of() : List.copyOf(distribution);
    latencyByOutcome = latencyByOutcome == null ? Map.of()
        : java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(latencyByOutcome));
    examples = examples == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(examples));
  }

  /** A run without LLM figures. */
  public RunResult(String name, Map<String, Object> config, String startedAt, String latencyFrom,
      double measuredSeconds, long requests, long ok, long errors, double achievedRps, double okRps,
      Double offeredRps, Latency latencyMs, Map<String, Long> outcomes, List<Sample> series,
      List<PercentilePoint> distribution, Map<String, Latency> latencyByOutcome,
      Map<String, Map<String, Long>> examples) {
    this(name, config, startedAt, latencyFrom, measuredSeconds, requests, ok, errors, achievedRps, okRps, offeredRps,
        latencyMs, outcomes, series, distribution, latencyByOutcome, examples, null);
  }

  /**
   * The streamed generations of an LLM run's measured phase, the successful ones only (failures are in
   * {@code outcomes}). Latencies start where the run's do ({@code latencyFrom}).
   *
   * @param api                   {@code completions} or {@code chat}
   * @param requests              successful generations
   * @param outputTokens          their output tokens: each answer's usage {@code completion_tokens}, else its text
   *                              chunks
   * @param outputTokensPerSecond {@code outputTokens / measuredSeconds}, all streams together
   * @param requestsPerSecond     successful requests per second (the run's {@code okRps})
   * @param ttftMs                time to first token: to the first non-empty text chunk
   * @param itlMs                 inter-token latency: every gap between successive text chunks (a chunk of several
   *                              tokens counts once)
   * @param e2eMs                 to the end of the stream
   */
  public record Llm(String api, long requests, long outputTokens, double meanOutputTokens,
      double outputTokensPerSecond, double requestsPerSecond, Latency ttftMs, Latency itlMs, Latency e2eMs) {
  }

  /** How many measured requests ended as {@code key}. */
  public long count(String key) {
    return outcomes.getOrDefault(key, 0L);
  }

  /** Latency summary of the measured requests, in milliseconds. */
  public record Latency(long count, double min, double mean, double p50, double p90, double p99, double p999,
      double max) {
  }

  /**
   * One interval of the measurement.
   *
   * @param t        end of the interval, seconds from the start of measurement
   * @param seconds  length of the interval
   * @param requests requests that ended in it, all outcomes
   * @param p50      latency percentiles of the requests that ended in it; null when none did
   */
  public record Sample(double t, double seconds, long requests, double rps, long errors, Double p50, Double p99,
      Double max) {
  }

  /** The latency at or below which {@code percentile} percent of requests finished. */
  public record PercentilePoint(double percentile, double latencyMs) {
  }

  /** errors / requests; 0 when there were no requests. */
  public double errorRatio() {
    return requests == 0 ? 0 : (double) errors / requests;
  }
}
