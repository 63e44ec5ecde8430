package io.kiln.pools.impl;

import io.kiln.pools.HealthSpec;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * A pool manager's health checks of its own workers: every {@code period} each worker in rotation gets a
 * probe on the path it serves by (its one serial thread, behind whatever batch it runs), which must answer
 * within {@code timeout}. A worker that does not is stuck (a hung model call, a deadlock) and is reported
 * silent once, so the manager restarts it through {@link PoolWorkers} (the restart fails the batch it holds,
 * whose requests are re-queued, and reloads its model under the pool's {@code max_restarts}). Without it a
 * hung batch would be noticed only at the call timeout (at least a minute).
 *
 * <p>Threading: every method, the {@link Timers} tasks and the completions handed over by {@code executor}
 * run on the manager's thread. Time comes only from {@code timers}, so tests drive it with a manual clock.
 */
public final class HealthProber {

  /** One worker to probe: its name and the probe call, which completes when the worker answered. */
  public record Target(String worker, Supplier<CompletionStage<?>> probe) {
    public Target {
      Objects.requireNonNull(worker, "worker");
      Objects.requireNonNull(probe, "probe");
    }
  }

  private final HealthSpec spec;
  private final Timers timers;
  private final Executor executor;
  private final Supplier<List<Target>> targets;
  private final BiConsumer<String, String> silent;
  /** Probes in flight by worker, with their timeout timer (-1 once it fired). */
  private final Map<String, long[]> probing = new HashMap<>();
  private long tick = -1;
  private boolean stopped;

  /**
   * @param executor hands probe completions to the manager's thread
   * @param targets the workers in rotation now
   * @param silent told {@code (worker, why)} once per probe a worker did not answer in time
   */
  public HealthProber(HealthSpec spec, Timers timers, Executor executor, Supplier<List<Target>> targets,
                      BiConsumer<String, String> silent) {
    this.spec = Objects.requireNonNull(spec, "spec");
    this.timers = Objects.requireNonNull(timers, "timers");
    this.executor = Objects.requireNonNull(executor, "executor");
    this.targets = Objects.requireNonNull(targets, "targets");
    this.silent = Objects.requireNonNull(silent, "silent");
  }

  /** Starts probing: the first round one period from now. */
  public void start() {
    if (!stopped && tick < 0) {
      schedule();
    }
  }

  /** Stops probing; answers still to come are ignored. Idempotent. */
  public void stop() {
    stopped = true;
    if (tick >= 0) {
      timers.cancel(tick);
      tick = -1;
    }
    probing.values().forEach(t -> {
      if (t[0] >= 0) {
        timers.cancel(t[0]);
      }
    });
    probing.clear();
  }

  private void schedule() {
    tick = timers.schedule(spec.period().toNanos(), this::round);
  }

  private void round() {
    tick = -1;
    if (stopped) {
      return;
    }
    for (Target t : targets.get()) {
      if (!probing.containsKey(t.worker())) {
        probe(t);
      }
    }
    schedule();
  }

  // A worker still busy with the previous probe gets none: that one's timeout speaks for it.
  private void probe(Target t) {
    long[] timer = {-1};
    probing.put(t.worker(), timer);
    timer[0] = timers.schedule(spec.timeout().toNanos(), () -> {
      timer[0] = -1;
      if (!stopped && probing.get(t.worker()) == timer) {
        silent.accept(t.worker(), "no answer to a health check within " + spec.timeout().toMillis() + " ms");
      }
    });
    CompletionStage<?> call;
    try {
      call = t.probe().get();
    } catch (RuntimeException e) {
      answered(t.worker(), timer); // could not even be sent: the worker is gone; its manager deals with it
      return;
    }
    call.whenComplete((v, e) -> executor.execute(() -> answered(t.worker(), timer)));
  }

  private void answered(String worker, long[] timer) {
    if (probing.remove(worker, timer) && timer[0] >= 0) {
      timers.cancel(timer[0]);
    }
  }
}
