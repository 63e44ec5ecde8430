package io.kiln.pools.impl;

import io.kiln.pools.ModelRepository;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The dispatcher's picture of which worker of a multiplexed pool holds which models, and the choice it makes
 * from it: which queued request goes next, onto which idle worker.
 *
 * <p>Each worker keeps its models in least-recently-used order, at most {@code maxModelsPerWorker}; a worker runs
 * its batches (and explicit loads) in the order they are sent, so a mirror that applies the same operations in the
 * same order agrees with the worker without asking it (see {@link WorkerModels}, which does the same on the
 * worker). A worker that failed, restarted or left is forgotten: it comes back empty.
 *
 * <p><b>Choice</b> ({@link #choose}): requests are scanned in FIFO order (at most {@value #SCAN_LIMIT}); the first
 * one whose model an idle worker holds goes there (a hit), before any request that needs a load. A request whose model is being loaded waits for that
 * load rather than starting a second one. A request whose model only busy workers hold waits for one of them,
 * unless it is the oldest request and has waited {@link #REPLICATE_AFTER_NANOS} (then an idle worker loads the model
 * too: a model too hot for one worker spreads over several). Nothing is lost by waiting: a holder's batch ending
 * runs the choice again. Only when no hit is queued, the first request whose model no worker holds goes to the idle
 * worker holding the fewest models (most recently idle among equals; when it is full its least recently used model
 * is evicted), when fewer than {@code maxConcurrentLoads} loads run (a miss).
 * Not thread-safe: the dispatcher's thread owns it.
 */
final class ModelAffinity {

  static final int SCAN_LIMIT = 256;
  /** How long the oldest request waits for a busy holder of its model before an idle worker loads it too. */
  static final long REPLICATE_AFTER_NANOS = java.time.Duration.ofMillis(500).toNanos();

  /** A decision: send the batch headed by {@code request} to {@code worker}; {@code miss} when it loads the model. */
  record Choice(PendingRequest request, WorkerSlot worker, boolean miss) {
  }

  private final ModelRepository repository;
  private final Map<String, LinkedHashSet<String>> held = new HashMap<>(); // worker id -> models, LRU first
  private final Map<String, String> loading = new HashMap<>(); // model -> worker id loading it
  private final MultiplexMeters meters;

  ModelAffinity(ModelRepository repository, MultiplexMeters meters) {
    this.repository = repository;
    this.meters = meters;
    meters.loadedModels(this::distinctLoaded);
  }

  ModelRepository repository() {
    return repository;
  }

  Choice choose(RequestQueue queue, PendingRequest oldest, Iterable<WorkerSlot> idle, long nowNanos) {
    // Hits first, anywhere in the scan: a load evicts a model other requests may want, so it is taken only when no
    // idle worker can serve a queued request from what it holds.
    PendingRequest firstMiss = null;
    int scanned = 0;
    for (PendingRequest p = oldest; p != null && scanned < SCAN_LIMIT; p = p.next, scanned++) {
      if (p.isDead(nowNanos)) {
        continue;
      }
      String model = p.key.model();
      String loader = loading.get(model);
      if (loader != null) {
        WorkerSlot s = find(idle, loader);
        if (s != null) {
          return new Choice(p, s, false); // an explicit load: the batch waits behind it in the worker's mailbox
        }
        continue; // wait for that load, never a second one
      }
      boolean heldElsewhere = false;
      for (Map.Entry<String, LinkedHashSet<String>> e : held.entrySet()) {
        if (e.getValue().contains(model)) {
          WorkerSlot s = find(idle, e.getKey());
          if (s != null) {
            return new Choice(p, s, false);
          }
          heldElsewhere = true;
        }
      }
      if (firstMiss == null && (!heldElsewhere
          || p == oldest && nowNanos - p.enqueuedNanos >= REPLICATE_AFTER_NANOS)) {
        firstMiss = p;
      }
    }
    if (firstMiss == null || loading.size() >= repository.maxConcurrentLoads()) {
      return null;
    }
    WorkerSlot target = null; // the idle worker holding fewest models (spreads models, evicts least)
    for (WorkerSlot s : idle) {
      if (target == null || models(s.id()).size() < models(target.id()).size()) {
        target = s;
      }
    }
    return target == null ? null : new Choice(firstMiss, target, true);
  }

  /** A batch of {@code model} went to {@code worker}: the worker touches it, or loads it evicting its LRU model. */
  void dispatched(String worker, String model, boolean miss) {
    LinkedHashSet<String> models = models(worker);
    if (models.remove(model)) {
      models.add(model);
      if (!miss) {
        meters.hit();
      }
      return;
    }
    meters.miss();
    models.add(model);
    loading.put(model, worker);
    evictBeyondLimit(models);
  }

  /** An explicit load of {@code model} was sent to {@code worker}; false if it holds the model already. */
  boolean loadSent(String worker, String model) {
    LinkedHashSet<String> models = models(worker);
    if (models.remove(model)) {
      models.add(model);
      return false;
    }
    models.add(model);
    loading.put(model, worker);
    evictBeyondLimit(models);
    return true;
  }

  /** The batch (or load) of {@code model} on {@code worker} ended; a failed load leaves the worker without it. */
  void done(String worker, String model, boolean loaded) {
    if (worker.equals(loading.get(model))) {
      loading.remove(model);
      if (!loaded) {
        models(worker).remove(model);
      }
    }
  }

  /** The worker failed, restarted or left: it holds nothing (a restarted worker starts empty). */
  void forget(String worker) {
    held.remove(worker);
    loading.values().removeIf(worker::equals);
  }

  /** Drops {@code model} from every worker; returns the ids of those that held it (tell them to close it). */
  List<String> unload(String model) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, LinkedHashSet<String>> e : held.entrySet()) {
      if (e.getValue().remove(model)) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  boolean isLoadingOn(String worker, String model) {
    return worker.equals(loading.get(model));
  }

  int loadingCount() {
    return loading.size();
  }

  void close() {
    meters.close();
  }

  boolean isLoading(String model) {
    return loading.containsKey(model);
  }

  boolean isLoaded(String model) {
    for (LinkedHashSet<String> models : held.values()) {
      if (models.contains(model) && !loading.containsKey(model)) {
        return true;
      }
    }
    return false;
  }

  /** The models some worker holds (loaded, not loading), in repository order. */
  List<String> loadedModels() {
    Set<String> all = new LinkedHashSet<>();
    for (String name : repository.names()) {
      if (isLoaded(name)) {
        all.add(name);
      }
    }
    return List.copyOf(all);
  }

  /** The worker holding fewest models among {@code candidates} (ids), for an explicit load; null if none. */
  String leastLoaded(Iterable<String> candidates) {
    String best = null;
    for (String id : candidates) {
      if (best == null || models(id).size() < models(best).size()) {
        best = id;
      }
    }
    return best;
  }

  /** Where {@code model} is held or loading, if anywhere. */
  String holderOf(String model) {
    String l = loading.get(model);
    if (l != null) {
      return l;
    }
    for (Map.Entry<String, LinkedHashSet<String>> e : held.entrySet()) {
      if (e.getValue().contains(model)) {
        return e.getKey();
      }
    }
    return null;
  }

  private int distinctLoaded() {
    Set<String> all = new java.util.HashSet<>();
    held.values().forEach(all::addAll);
    return all.size();
  }

  private void evictBeyondLimit(LinkedHashSet<String> models) {
    while (models.size() > repository.maxModelsPerWorker()) {
      String lru = models.iterator().next();
      models.remove(lru);
      meters.evicted();
    }
  }

  private LinkedHashSet<String> models(String worker) {
    return held.computeIfAbsent(worker, w -> new LinkedHashSet<>());
  }

  private static WorkerSlot find(Iterable<WorkerSlot> idle, String id) {
    for (WorkerSlot s : idle) {
      if (s.id().equals(id)) {
        return s;
      }
    }
    return null;
  }
}
