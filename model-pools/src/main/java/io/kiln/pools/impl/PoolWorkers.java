package io.kiln.pools.impl;

import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelWorker;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.Resources;
import io.vertx.core.Context;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers of one pool manager: get-or-creates them by name (so a restarted or re-created manager
 * adopts the live detached workers of its predecessor without reloading their models), puts them in the
 * dispatcher's rotation once they answer, restarts the ones that fail, scales and retires them.
 *
 * <p>Threading: lives on the manager's context; every method must be called there, and every
 * asynchronous continuation hops back to it before touching state.
 *
 * <p>Restarts: a worker that failed under a batch is killed with restart allowed, which re-runs its
 * constructor and so reloads its model, as long as the runtime's restart budget for it
 * ({@code workerMaxRestarts}, counted by the runtime across manager incarnations) lasts; then it is put
 * back under the same id. With no restarts left it dies, leaves the rotation and stays listed as DEAD. A
 * worker the manager's {@link HealthProber} found silent is restarted the same way ({@link #restartSilent}).
 */
public final class PoolWorkers {

  private static final Logger LOG = LoggerFactory.getLogger(PoolWorkers.class);
  /** How long a worker may take to (re)load its model before its manager gives up on it. */
  private static final Duration LOAD_TIMEOUT = Duration.ofMinutes(30);

  private final KilnRuntime runtime;
  private final PoolSpec spec;
  private final Context context;
  private final PoolDispatcher dispatcher;
  private final DispatchTimes times;
  private final LongSupplier clock;
  private final Duration callTimeout;
  private final Runnable onChange;
  private final TreeMap<Integer, Entry> entries = new TreeMap<>();
  private final Map<String, Entry> byName = new HashMap<>();
  private String lastRepair;
  private boolean closed;

  private static final class Entry {
    final int index;
    final String name;
    ActorHandle<ModelWorker> handle;
    ActorWorkerChannel channel;
    /** A streaming worker's stream slots, in the dispatcher instead of {@link #channel}; null otherwise. */
    List<WorkerChannel> lanes;
    WorkerState state = WorkerState.STARTING;
    int restarts;
    ModelLoadInfo loadInfo;
    String lastError;
    /** Completes once the worker first left STARTING (ready, dead or retired). */
    final CompletableFuture<Void> settled = new CompletableFuture<>();
    /** Set when a scale-down or drain retires it; completes once it is killed. */
    CompletableFuture<Void> gone;
    boolean killing;

    Entry(int index, String name) {
      this.index = index;
      this.name = name;
    }
  }

  /**
   * @param callTimeout how long one batch may run before its worker counts as failed (a local actor call's deadline,
   *     kept, like every one, on the runtime's {@link io.kiln.runtime.time.Deadlines})
   * @param onChange told when a worker enters or leaves the rotation
   */
  public PoolWorkers(KilnRuntime runtime, PoolSpec spec, Context context, PoolDispatcher dispatcher,
                     DispatchTimes times, LongSupplier clock, Duration callTimeout, Runnable onChange) {
    this.runtime = runtime;
    this.spec = spec;
    this.context = context;
    this.dispatcher = dispatcher;
    this.times = times;
    this.clock = clock;
    this.callTimeout = callTimeout;
    this.onChange = onChange;
  }

  /**
   * Starts workers {@code 0..spec.workers()-1} and adopts any other live worker of this pool (one a
   * predecessor scaled up). Completes once every one of them is ready or dead.
   */
  public CompletionStage<Void> start() {
    String prefix = spec.managerName() + "/" + PoolNames.WORKER_PREFIX;
    return runtime.namedActors().handle((all, err) -> {
      TreeSet<Integer> indices = new TreeSet<>();
      for (int i = 0; i < spec.workers(); i++) {
        indices.add(i);
      }
      if (err != null) {
        LOG.warn("pool {}: cannot list named actors, adopting only workers 0..{}: {}", spec.managerName(),
            spec.workers() - 1, err.toString());
      } else {
        for (ActorInfo a : all) {
          if (PoolManager.NAMESPACE.equals(a.namespace()) && a.name() != null && a.name().startsWith(prefix)
              && a.state() != ActorState.DEAD && spec.nodeId().equals(a.nodeId())) {
            PoolNames.parse(a.name()).flatMap(p -> p.workerIndex().isPresent()
                ? java.util.Optional.of(p.workerIndex().getAsInt()) : java.util.Optional.empty())
                .ifPresent(indices::add);
          }
        }
      }
      return indices;
    }).thenCompose(indices -> onContext(() -> {
      List<CompletableFuture<Void>> started = new ArrayList<>();
      if (!closed) {
        for (int i : indices) {
          started.add(startWorker(i).settled);
        }
      }
      return CompletableFuture.allOf(started.toArray(CompletableFuture[]::new));
    })).thenCompose(f -> f);
  }

  private Entry startWorker(int index) {
    Entry e = new Entry(index, PoolNames.worker(spec.deployment(), spec.version(), spec.nodeId(), index));
    entries.put(index, e);
    byName.put(e.name, e);
    runtime.actor(ModelWorker::new, spec.worker(index)).options(ModelWorker.options(spec, index)).remote()
        .whenComplete((h, err) -> context.runOnContext(v -> created(e, h, err)));
    return e;
  }

  private void created(Entry e, ActorHandle<ModelWorker> h, Throwable err) {
    if (err != null) {
      died(e, "could not be created: " + describe(err));
      return;
    }
    e.handle = h;
    e.channel = new ActorWorkerChannel(e.name, h.withTimeout(callTimeout), times, clock);
    if (spec.model().streaming()) {
      e.lanes = e.channel.lanes(spec.config().maxBatchSize(), StreamHub.of(runtime));
    }
    if (e.gone != null) {
      kill(e);
    } else if (!closed) {
      awaitReady(e);
    }
  }

  // A call made while the worker is (re)loading waits in its mailbox, so this answers once the model is warm.
  private void awaitReady(Entry e) {
    e.handle.withTimeout(LOAD_TIMEOUT).call(ModelWorker::loadInfo)
        .thenCombine(e.handle.info(), (info, actor) -> {
          e.restarts = actor.restarts();
          return info;
        })
        .whenComplete((info, err) -> context.runOnContext(v -> {
          if (closed || e.gone != null) {
            return;
          }
          if (err != null) {
            died(e, describe(err));
            return;
          }
          e.loadInfo = info;
          e.state = WorkerState.READY;
          for (WorkerChannel c : e.lanes != null ? e.lanes : List.<WorkerChannel>of(e.channel)) {
            try {
              dispatcher.addWorker(c);
            } catch (IllegalStateException alreadyThere) {
              LOG.debug("pool {}: {} was already in rotation", spec.managerName(), c.id());
            }
          }
          e.settled.complete(null);
          onChange.run();
        }));
  }

  /** The dispatcher's failure listener: restart the worker (reloading its model) or, with none left, drop it. */
  public void workerFailed(String id, Throwable cause) {
    int lane = id.lastIndexOf('#');
    Entry e = byName.get(lane >= 0 ? id.substring(0, lane) : id);
    if (e == null || closed || e.gone != null || e.lanes != null && e.state == WorkerState.RESTARTING) {
      return; // a streaming worker's other lanes report the same failure
    }
    e.state = WorkerState.RESTARTING;
    e.lastError = describe(cause);
    onChange.run();
    e.handle.info().whenComplete((info, err) -> context.runOnContext(v -> {
      if (closed || e.gone != null) {
        return;
      }
      ActorState s = info == null ? ActorState.DEAD : info.state();
      if (s == ActorState.ALIVE && info.restarts() > e.restarts) {
        // Restarted since it last joined the rotation (a fatal error, or a health check, restartSilent):
        // its model was reloaded already; a second kill would only spend another restart.
        awaitReady(e);
        return;
      }
      switch (s) {
        case DEAD -> died(e, info == null ? describe(err) : info.deathCause());
        case RESTARTING -> awaitReady(e); // a fatal error: the runtime is restarting it already
        default -> runtime.kill(e.handle, true).whenComplete((x, kerr) -> context.runOnContext(w -> {
          if (!closed && e.gone == null) {
            awaitReady(e);
          }
        }));
      }
    }));
  }

  /** The workers in rotation, as the health prober probes them: a call on each one's serving thread. */
  public List<HealthProber.Target> probeTargets(Duration callTimeout) {
    List<HealthProber.Target> out = new ArrayList<>();
    for (Entry e : entries.values()) {
      if (e.state == WorkerState.READY && e.gone == null && e.handle != null && streaming(e)) {
        // Its thread runs the step loop, which a probe would wait behind: the loop's heartbeat answers instead.
        out.add(new HealthProber.Target(e.name, () -> beating(e) ? CompletableFuture.completedFuture(null)
            : new CompletableFuture<>()));
      } else if (e.state == WorkerState.READY && e.gone == null && e.handle != null) {
        ActorHandle<ModelWorker> h = e.handle.withTimeout(callTimeout);
        out.add(new HealthProber.Target(e.name, () -> h.call(ModelWorker::loadInfo)));
      }
    }
    return out;
  }

  /**
   * The prober's verdict on a stuck worker: kill it with restart allowed, which fails the batch it holds
   * (the dispatcher re-queues those requests and reports the failure, see {@link #workerFailed}) and
   * reloads its model, under the pool's restart budget.
   */
  public void restartSilent(String name, String why) {
    Entry e = byName.get(name);
    if (e == null || closed || e.gone != null || e.state != WorkerState.READY) {
      return;
    }
    if (streaming(e) && beating(e)) {
      return; // the probe waited behind the step loop, which is alive
    }
    lastRepair = "restarted stuck worker " + name + ": " + why;
    LOG.warn("pool {}: {}", spec.managerName(), lastRepair);
    runtime.kill(e.handle, true).whenComplete((v, err) -> {
      if (err != null) {
        LOG.debug("pool {}: restarting worker {} failed: {}", spec.managerName(), name, err.toString());
      }
    });
  }

  /** The last restart of a stuck worker, and why; null if none. */
  public String lastRepair() {
    return lastRepair;
  }

  private static boolean streaming(Entry e) {
    return e.lanes != null && e.channel != null && e.channel.streaming();
  }

  // The loop beats at every step and at least every StreamSteps.BEAT_MILLIS while it waits; a hung model stops it.
  private boolean beating(Entry e) {
    long last = StreamHub.of(runtime).joins(e.name).lastBeatNanos();
    return clock.getAsLong() - last < spec.health().timeout().toNanos() + StreamSteps.BEAT_MILLIS * 1_000_000;
  }

  private void removeFromDispatcher(Entry e) {
    dispatcher.removeWorker(e.name);
    if (e.lanes != null) {
      e.lanes.forEach(l -> dispatcher.removeWorker(l.id()));
    }
  }

  private void died(Entry e, String why) {
    LOG.warn("pool {}: worker {} is dead: {}", spec.managerName(), e.name, why);
    e.state = WorkerState.DEAD;
    e.lastError = why;
    removeFromDispatcher(e);
    e.settled.complete(null);
    if (e.gone != null) {
      forget(e);
    }
    onChange.run();
  }

  /**
   * Scales towards {@code target} live workers: adds (re-creating dead ones first, then new indices) as
   * many as the node's unreserved resources allow now, or retires the highest-numbered ones (each finishes
   * its batch, then is killed). Completes with the live count once the added workers are ready or dead
   * and the retired ones are gone.
   */
  public CompletionStage<Integer> scale(int target) {
    if (target < 0 || target > PoolSpec.MAX_WORKERS) {
      return CompletableFuture.failedFuture(new IllegalArgumentException(
          "workers must be in 0.." + PoolSpec.MAX_WORKERS + ", got " + target));
    }
    List<Entry> live = live();
    List<CompletableFuture<Void>> waits = new ArrayList<>();
    if (target > live.size()) {
      Resources available = runtime.localNode().available();
      Resources each = spec.workerResources();
      for (int i = live.size(); i < target && each.fitsIn(available); i++) {
        available = available.minus(each);
        int index = 0;
        while (entries.containsKey(index) && entries.get(index).state != WorkerState.DEAD) {
          index++;
        }
        waits.add(startWorker(index).settled);
      }
      if (live.size() + waits.size() < target) {
        LOG.info("pool {}: scaling to {} workers, only {} fit in the node's unreserved resources",
            spec.managerName(), target, live.size() + waits.size());
      }
    } else {
      for (int i = live.size() - 1; i >= target; i--) {
        waits.add(retire(live.get(i)));
      }
    }
    return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new))
        .thenCompose(v -> onContext(() -> live().size()));
  }

  /** Retires every worker (a drain): each finishes its batch, then is killed. Dead ones are forgotten. */
  public CompletionStage<Void> retireAll() {
    List<CompletableFuture<Void>> waits = new ArrayList<>();
    for (Entry e : new ArrayList<>(entries.values())) {
      if (e.state == WorkerState.DEAD) {
        forget(e);
      } else {
        waits.add(retire(e));
      }
    }
    return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new));
  }

  private CompletableFuture<Void> retire(Entry e) {
    if (e.gone != null) {
      return e.gone;
    }
    e.gone = new CompletableFuture<>();
    e.state = WorkerState.STOPPING;
    removeFromDispatcher(e);
    e.settled.complete(null);
    onChange.run();
    if (e.channel != null) {
      e.channel.idle().whenComplete((v, x) -> context.runOnContext(w -> kill(e)));
    } // else created() kills it once its creation completes
    return e.gone;
  }

  private void kill(Entry e) {
    if (e.killing) {
      return;
    }
    e.killing = true;
    runtime.kill(e.handle, false).whenComplete((v, err) -> context.runOnContext(w -> {
      if (err != null) {
        LOG.debug("pool {}: killing worker {} failed (already gone?): {}", spec.managerName(), e.name, err.toString());
      }
      forget(e);
    }));
  }

  private void forget(Entry e) {
    entries.remove(e.index, e);
    byName.remove(e.name, e);
    if (e.gone != null) {
      e.gone.complete(null);
    }
  }

  /**
   * Stops managing: later completions are ignored and the workers are left alive, so that the next
   * manager of this pool adopts them.
   */
  public void close() {
    closed = true;
  }

  private List<Entry> live() {
    return entries.values().stream().filter(e -> e.state != WorkerState.DEAD && e.gone == null).toList();
  }

  public int liveCount() {
    return live().size();
  }

  /** Whether a worker is in rotation. */
  public boolean ready() {
    for (Entry e : entries.values()) {
      if (e.state == WorkerState.READY) {
        return true;
      }
    }
    return false;
  }

  public List<WorkerStatus> status() {
    List<WorkerStatus> out = new ArrayList<>(entries.size());
    for (Entry e : entries.values()) {
      out.add(new WorkerStatus(e.index, e.name, e.handle == null ? null : e.handle.actorId(), e.state,
          e.channel != null && e.channel.busy(), e.restarts, e.loadInfo, e.lastError));
    }
    return out;
  }

  private <T> CompletableFuture<T> onContext(java.util.function.Supplier<T> work) {
    CompletableFuture<T> f = new CompletableFuture<>();
    context.runOnContext(v -> {
      try {
        f.complete(work.get());
      } catch (RuntimeException e) {
        f.completeExceptionally(e);
      }
    });
    return f;
  }

  static String describe(Throwable error) {
    Throwable t = Futures.unwrapCompletion(error);
    return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
  }
}
