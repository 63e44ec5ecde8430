package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pools.PoolLoad;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where a deployment job may send inputs now: its inputs in flight per node, those of them that reached the
 * pool (the task reports it), and so how much room each serving node has. With {@link JobSpec.Priority#LOW}
 * a node's room shrinks to one input per worker while online requests are outstanding there: the pool's
 * reported load less this job's inputs in it, against the most the job had there in the last
 * {@value #PEAK_WINDOW_MS} ms (reports are ~100 ms old and lag completions), and for {@value #POLITE_MS} ms
 * after online requests were last seen (online traffic has gaps the job would otherwise burst into).
 *
 * <p>Not thread-safe: the coordinator calls it holding its monitor.
 */
final class JobRoom {

  static final long POLITE_MS = 2_000;
  static final long PEAK_WINDOW_MS = 300;

  private final JobSpec spec;
  private final Map<String, Integer> inFlightOn = new HashMap<>();
  private final Map<Integer, String> nodeOf = new HashMap<>();
  private final Set<Integer> inPool = new HashSet<>();
  private final Map<String, Integer> inPoolOn = new HashMap<>();
  private final Map<String, Long> onlineSeenAt = new HashMap<>();
  private final Map<String, long[]> inPoolPeak = new HashMap<>();

  JobRoom(JobSpec spec) {
    this.spec = spec;
  }

  void dispatched(int input, String node) {
    inFlightOn.merge(node, 1, Integer::sum);
    nodeOf.put(input, node);
  }

  void released(int input, String node) {
    inFlightOn.computeIfPresent(node, (k, n) -> n <= 1 ? null : n - 1);
    nodeOf.remove(input);
    if (inPool.remove(input)) {
      inPoolOn.computeIfPresent(node, (k, n) -> n <= 1 ? null : n - 1);
    }
  }

  /** The task of {@code input} handed it to its node's pool. */
  void reachedPool(int input, long nowMs) {
    String node = nodeOf.get(input);
    if (node != null && inPool.add(input)) {
      int n = inPoolOn.merge(node, 1, Integer::sum);
      long[] peak = inPoolPeak.computeIfAbsent(node, k -> new long[2]);
      if (n >= peak[0] || nowMs - peak[1] > PEAK_WINDOW_MS) {
        peak[0] = n;
        peak[1] = nowMs;
      }
    }
  }

  int inFlightOn(String node) {
    return inFlightOn.getOrDefault(node, 0);
  }

  /** Free places per node serving {@code target} ({@code pools}: the load board's reports of it). */
  Map<String, Integer> room(InferTarget target, List<PoolLoad> pools, Set<String> members, long nowMs) {
    Map<String, Integer> room = new TreeMap<>();
    for (PoolLoad p : pools) {
      if (!p.ready() || p.draining() || !members.contains(p.nodeId())) {
        continue;
      }
      int allowed = spec.perNode();
      if (spec.priority() == JobSpec.Priority.LOW) {
        long online = Math.max(0, p.load() - recentInPool(p.nodeId(), nowMs));
        if (online > 0) {
          onlineSeenAt.put(p.nodeId(), nowMs);
        }
        Long seen = onlineSeenAt.get(p.nodeId());
        if (seen != null && nowMs - seen < POLITE_MS) {
          allowed = Math.min(spec.perNode(), Math.max(1, p.totalWorkers()));
        }
      }
      room.put(p.nodeId(), Math.max(0, allowed - inFlightOn(p.nodeId())));
    }
    return room;
  }

  private long recentInPool(String node, long nowMs) {
    long now = inPoolOn.getOrDefault(node, 0);
    long[] peak = inPoolPeak.get(node);
    return peak != null && nowMs - peak[1] <= PEAK_WINDOW_MS ? Math.max(now, peak[0]) : now;
  }
}
