package io.kiln.pipelines.impl;

import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobState;
import io.kiln.pipelines.jobs.JobStatus;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * What a {@link JobCoordinator}'s status says: the job's state and error, its counts (done, skipped, failed,
 * by cause, by node), its recent log lines and its times, and whether that changed since the status was last
 * stored. Owns the arithmetic of the snapshot (rate, ETA); not the dispatch (the coordinator's in-flight
 * count is passed in) nor the storing.
 *
 * <p>Not thread-safe: every call holds the coordinator's monitor.
 */
final class JobTally {

  private final String id;
  private final JobSpec spec;
  private final java.util.function.Supplier<String> nodeId;
  private final LongSupplier clockMillis;
  private final long createdAtMs;
  private int done;
  private int skipped;
  private int failed;
  private int doneHere;
  private final Map<String, Long> causes = new TreeMap<>();
  private final Map<String, Long> byNode = new TreeMap<>();
  private final ArrayDeque<String> logs = new ArrayDeque<>();
  private JobState state = JobState.RUNNING;
  private String error = "";
  private long startedAtMs;
  private long endedAtMs;
  private boolean dirty = true;

  JobTally(String id, JobSpec spec, java.util.function.Supplier<String> nodeId, LongSupplier clockMillis, long createdAtMs) {
    this.id = id;
    this.spec = spec;
    this.nodeId = nodeId;
    this.clockMillis = clockMillis;
    this.createdAtMs = createdAtMs;
  }

  long now() {
    return clockMillis.getAsLong();
  }

  /** The job starts now, {@code skipped} of its inputs having a result already. */
  void started(int skipped) {
    startedAtMs = now();
    this.skipped = skipped;
    this.done = skipped;
  }

  boolean terminal() {
    return state.terminal();
  }

  /** The job ends now, in {@code s}, with {@code why} as its error ("" for none). */
  void end(JobState s, String why) {
    state = s;
    error = why;
    endedAtMs = now();
  }

  /** {@code n} more inputs have their result on disk, from this run of the job. */
  void done(int n) {
    done += n;
    doneHere += n;
    dirty = true;
  }

  int doneCount() {
    return done;
  }

  /** {@code n} more inputs failed for good. */
  void failed(int n) {
    failed += n;
    dirty = true;
  }

  int failedCount() {
    return failed;
  }

  /** One more result fetched by {@code node}. */
  void byNode(String node) {
    byNode.merge(node, 1L, Long::sum);
  }

  /** One more failure of this cause (an attempt's, or an output write's). */
  void count(String cause) {
    causes.merge(cause, 1L, Long::sum);
  }

  /** Appends a status log line, stamped now; the oldest past {@link JobStatus#MAX_LOGS} go. */
  void log(String line) {
    logs.addLast(java.time.Instant.ofEpochMilli(now()) + " " + line);
    while (logs.size() > JobStatus.MAX_LOGS) {
      logs.removeFirst();
    }
    dirty = true;
  }

  void changed() {
    dirty = true;
  }

  /** Whether the status changed since the last {@link #snapshot}. */
  boolean dirty() {
    return dirty;
  }

  /** The status now (with {@code inFlight} inputs in flight); it is no longer {@link #dirty}. */
  JobStatus snapshot(int inFlight) {
    dirty = false;
    return peek(inFlight);
  }

  /** The status now, leaving {@link #dirty} as it is. */
  JobStatus peek(int inFlight) {
    long t = now();
    double secs = Math.max(0.001, ((endedAtMs > 0 ? endedAtMs : t) - startedAtMs) / 1000.0);
    double rate = startedAtMs == 0 ? 0 : doneHere / secs;
    int left = spec.inputs().size() - done - failed;
    long eta = state.terminal() ? 0 : rate > 0 ? (long) Math.ceil(left / rate) : -1;
    return new JobStatus(id, spec.name(), spec.target(), state, nodeId.get(), spec.output(),
        spec.inputs().size(), done, skipped, failed, inFlight, createdAtMs, startedAtMs, t, endedAtMs, rate, eta,
        causes, byNode, error, List.copyOf(logs));
  }
}
