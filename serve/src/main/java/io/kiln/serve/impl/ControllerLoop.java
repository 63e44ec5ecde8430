package io.kiln.serve.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.vertx.core.Context;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs reconcile passes on one Vert.x context: periodically and when kicked, only while this node is the
 * leader, never two at once (a kick during a pass schedules one more pass after it).
 */
public final class ControllerLoop implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ControllerLoop.class);

  private final KilnRuntime runtime;
  private final Reconciler reconciler;
  private final Duration period;
  private final Context context;
  private boolean running;
  private boolean again;
  private long timer = -1;
  private final AtomicBoolean closed = new AtomicBoolean();

  public ControllerLoop(KilnRuntime runtime, DesiredState state, PoolClient pools, PoolLoadBoard board,
                        Autoscaler autoscaler, LongSupplier clockMillis, Duration period, Duration drainGrace) {
    this.runtime = runtime;
    this.reconciler = new Reconciler(runtime, state, pools, board, autoscaler, clockMillis, drainGrace);
    this.period = period;
    this.context = runtime.vertx().getOrCreateContext();
    state.onChange(this::kick);
  }

  public void start() {
    context.runOnContext(v -> {
      timer = runtime.vertx().setPeriodic(Math.max(10, period.toMillis()), id -> pass());
      pass();
    });
  }

  /** Asks for a pass soon; callable from any thread. */
  public void kick() {
    context.runOnContext(v -> pass());
  }

  private void pass() {
    if (closed.get() || !runtime.isLeader()) {
      return;
    }
    if (running) {
      again = true;
      return;
    }
    running = true;
    reconciler.pass().whenComplete((v, err) -> context.runOnContext(x -> {
      if (err != null) {
        LOG.warn("reconcile pass failed", err);
      }
      running = false;
      if (again) {
        again = false;
        pass();
      }
    }));
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true) && timer >= 0) {
      runtime.vertx().cancelTimer(timer);
    }
  }
}
