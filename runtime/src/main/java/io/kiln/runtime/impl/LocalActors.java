package io.kiln.runtime.impl;

import io.kiln.runtime.ActorInfo;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The actors this node hosts, and the last {@value #MAX_TOMBSTONES} that died here (for "why is it
 * dead" answers). Written by the node agent, read by the call path for local info. Thread-safe.
 */
final class LocalActors {

  private static final int MAX_TOMBSTONES = 10_000;

  private final Map<String, ActorCell> cells = new ConcurrentHashMap<>();
  private final Map<String, ActorInfo> tombstones = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, ActorInfo> eldest) {
      return size() > MAX_TOMBSTONES;
    }
  };

  void add(ActorCell cell) {
    cells.put(cell.actorId, cell);
  }

  ActorCell get(String actorId) {
    return cells.get(actorId);
  }

  void remove(String actorId) {
    cells.remove(actorId);
  }

  /** A cell died: it is no longer hosted, and {@code info} is remembered as its last word. */
  void buried(ActorCell cell, ActorInfo info) {
    cells.remove(cell.actorId);
    synchronized (tombstones) {
      tombstones.put(cell.actorId, info);
    }
  }

  /** The live cells (a weakly consistent view). */
  Collection<ActorCell> cells() {
    return cells.values();
  }

  void clear() {
    cells.clear();
  }

  Optional<ActorInfo> info(String actorId) {
    ActorCell cell = cells.get(actorId);
    if (cell != null) {
      return Optional.of(cell.info());
    }
    synchronized (tombstones) {
      return Optional.ofNullable(tombstones.get(actorId));
    }
  }

  List<ActorInfo> all() {
    List<ActorInfo> out = new ArrayList<>();
    cells.values().forEach(c -> out.add(c.info()));
    synchronized (tombstones) {
      out.addAll(tombstones.values());
    }
    return out;
  }
}
