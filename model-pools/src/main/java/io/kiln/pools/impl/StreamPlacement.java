package io.kiln.pools.impl;

import io.kiln.pools.PrefixAffinity;
import java.util.HashMap;
import java.util.Map;

/**
 * Which idle stream lane takes a stream: a lane of the worker that holds the stream's prompt prefix (its KV cache
 * can reuse it) while that worker is not clearly busier than the least loaded one, else a lane of the least loaded
 * worker (streams spread over workers instead of piling onto the most recently used one's lanes). A worker's load
 * is its busy lanes: the streams it steps now. Used for streams only; batches go to the most recently idle worker.
 *
 * <p>Not thread-safe: the dispatcher's thread only.
 */
final class StreamPlacement {

  /** Keys remembered per pool: some thousands of prompts' prefixes. */
  static final int CAPACITY = 16_384;
  /** A holder may run this many more streams than the least loaded worker (plus a quarter) and keep its prefixes. */
  static final int LOAD_SLACK = 2;

  private final WorkerSet workers;
  private final PrefixAffinity prefixes = new PrefixAffinity(CAPACITY, LOAD_SLACK);
  private final Map<String, Integer> busy = new HashMap<>();
  private final Map<String, WorkerSlot> idleLane = new HashMap<>();

  StreamPlacement(WorkerSet workers) {
    this.workers = workers;
  }

  /** The idle lane for a stream of prefix {@code keys}; there is at least one idle lane. */
  WorkerSlot choose(long[] keys) {
    busy.clear();
    idleLane.clear();
    for (WorkerSlot s : workers.busy()) {
      busy.merge(worker(s.id()), 1, Integer::sum);
    }
    for (WorkerSlot s : workers.idle()) {
      idleLane.putIfAbsent(worker(s.id()), s); // most recently idle first
    }
    String chosen = prefixes.choose(keys, idleLane.keySet(), w -> w, w -> busy.getOrDefault(w, 0));
    if (chosen == null) {
      int least = Integer.MAX_VALUE;
      for (String w : idleLane.keySet()) {
        int load = busy.getOrDefault(w, 0);
        if (load < least) {
          least = load;
          chosen = w;
        }
      }
    }
    prefixes.record(keys, chosen);
    return idleLane.get(chosen);
  }

  /** The worker a lane belongs to ({@code <worker>#<j>}, see {@link ActorWorkerChannel#lanes}). */
  static String worker(String laneId) {
    int hash = laneId.lastIndexOf('#');
    return hash < 0 ? laneId : laneId.substring(0, hash);
  }
}
