package io.kiln.pipelines.impl;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * A {@link JobCoordinator}'s inputs not yet dispatched, as indices into the spec's inputs: those that may go
 * anywhere ({@code pending}, retries first) and those waiting for room on the node that caches them. Owns the
 * choice of which inputs go to which node given each node's free room ({@link #choose}).
 *
 * <p>Not thread-safe: every call holds the coordinator's monitor.
 */
final class InputQueue {

  /** One input bound for one node. */
  record Dispatch(int index, String node) { }

  private final ArrayDeque<Integer> pending = new ArrayDeque<>();
  private final Map<String, ArrayDeque<Integer>> waiting = new HashMap<>();

  /** Queues an input last (a new one). */
  void add(int index) {
    pending.add(index);
  }

  /** Queues an input first (one to dispatch again). */
  void addFirst(int index) {
    pending.addFirst(index);
  }

  /** Whether inputs wait for no particular node. */
  boolean hasPending() {
    return !pending.isEmpty();
  }

  /** Whether no input waits at all. */
  boolean isEmpty() {
    return pending.isEmpty() && waiting.isEmpty();
  }

  void clear() {
    pending.clear();
    waiting.clear();
  }

  /**
   * Takes the inputs to dispatch now, at most {@code slots}, consuming {@code room} (free places per serving
   * node): inputs waiting for a node that serves no more go back to pending; those waiting for their caching
   * node go first where it has room; then pending inputs in order, each to the node that caches it
   * ({@code cachedNode}, or waiting for room there) or else to the node with most room.
   */
  List<Dispatch> choose(Map<String, Integer> room, int slots, BiFunction<Integer, Set<String>, String> cachedNode) {
    List<Dispatch> out = new ArrayList<>();
    // Inputs waiting for a node that no longer serves (it left, or its pool went) wait no more.
    for (var it = waiting.entrySet().iterator(); it.hasNext(); ) {
      var e = it.next();
      if (!room.containsKey(e.getKey())) {
        e.getValue().descendingIterator().forEachRemaining(pending::addFirst);
        it.remove();
      }
    }
    // Inputs waiting for the node that caches them go first, where that node has room.
    for (var e : waiting.entrySet()) {
      int free = room.getOrDefault(e.getKey(), 0);
      while (free > 0 && out.size() < slots && !e.getValue().isEmpty()) {
        out.add(new Dispatch(e.getValue().poll(), e.getKey()));
        free--;
      }
      room.put(e.getKey(), free);
    }
    waiting.values().removeIf(ArrayDeque::isEmpty);
    while (out.size() < slots && !pending.isEmpty()) {
      int i = pending.peek();
      String cachedOn = cachedNode.apply(i, room.keySet());
      if (cachedOn != null) {
        pending.poll();
        if (room.get(cachedOn) > 0) {
          room.merge(cachedOn, -1, Integer::sum);
          out.add(new Dispatch(i, cachedOn));
        } else {
          waiting.computeIfAbsent(cachedOn, k -> new ArrayDeque<>()).add(i);
        }
        continue;
      }
      String best = null;
      for (var e : room.entrySet()) {
        if (e.getValue() > 0 && (best == null || e.getValue() > room.get(best))) {
          best = e.getKey();
        }
      }
      if (best == null) {
        break;
      }
      pending.poll();
      room.merge(best, -1, Integer::sum);
      out.add(new Dispatch(i, best));
    }
    return out;
  }
}
