package io.kiln.pipelines.jobs;

import java.util.List;
import java.util.Map;

/**
 * A job as its coordinator last recorded it (rewritten at most every {@link Jobs#STATUS_PERIOD_MS} and at
 * each end), readable from any node.
 *
 * @param total inputs of the job
 * @param done inputs with a result in the output folder, those of earlier attempts of the job included
 * @param skipped inputs that already had a result when this attempt of the job started
 * @param failed inputs that failed after their retries (in this attempt)
 * @param inFlight inputs being fetched or analysed now
 * @param rowsPerSecond results per second in this attempt
 * @param etaSeconds estimated seconds to the end at that rate; -1 when unknown
 * @param failuresByCause failed attempts by cause (retried ones included)
 * @param resultsByNode results of this attempt by the node that fetched and analysed the input
 * @param logs the latest log lines, oldest first (at most {@link #MAX_LOGS})
 */
public record JobStatus(String id, String name, String target, JobState state, String coordinator, String output,
                        int total, int done, int skipped, int failed, int inFlight, long createdAtMs,
                        long startedAtMs, long updatedAtMs, long endedAtMs, double rowsPerSecond, long etaSeconds,
                        Map<String, Long> failuresByCause, Map<String, Long> resultsByNode, String error,
                        List<String> logs) {

  public static final int MAX_LOGS = 200;

  public JobStatus {
    failuresByCause = Map.copyOf(failuresByCause);
    resultsByNode = Map.copyOf(resultsByNode);
    logs = List.copyOf(logs);
  }

  public JobStatus withState(JobState s, String why, long atMs) {
    return new JobStatus(id, name, target, s, coordinator, output, total, done, skipped, failed, 0, createdAtMs,
        startedAtMs, atMs, atMs, rowsPerSecond, -1, failuresByCause, resultsByNode, why, logs);
  }
}
