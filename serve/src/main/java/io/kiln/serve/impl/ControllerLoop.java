package io.kiln.serve.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.vertx.core.Context;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs reconcile passes on one Vert.x context: every {@code period}, when kicked (desired state changed, a
 * member joined or left, this node became the leader), only while this node is the leader, never two at
 * once (a kick during a pass schedules one more pass after it), and never before {@link #start()} (which
 * the controller calls once the desired state is loaded: a pass on a partial picture would retire pools
 * of deployments it has not read yet).
 */
public final class ControllerLoop implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ControllerLoop.class);

  private final KilnRuntime runtime;
  private final Reconciler reconciler;
  private final PoolCreator creator;
  private final Duration period;
  private final Context context;
  // Touched on the context only.
  private boolean started;
  private boolean running;
  private boolean again;
  private boolean leading;
  private long timer = -1;
  private volatile boolean closed;

  public ControllerLoop(KilnRuntime runtime, DesiredState state, PoolClient pools, PoolLoadBoard board,
                        LongSupplier clockMillis, Duration period, Duration drainGrace) {
    this.runtime = runtime;
    this.period = period;
    this.context = runtime.vertx().getOrCreateContext();
    Executor onContext = task -> context.runOnContext(v -> task.run());
    this.creator = new PoolCreator(runtime);
    this.reconciler = new Reconciler(runtime, state, pools, board, creator, clockMillis, drainGrace, onContext);
    state.onChange(this::kick);
    runtime.addMembershipListener(new MembershipListener() {
      @Override
      public void memberJoined(String memberId) {
        kick();
      }

      @Override
      public void memberLeft(String memberId) {
        kick();
      }

      @Override
      public void leaderChanged(boolean isLeader) {
        kick();
      }
    });
  }

  /** Completes once this node can create the pools the leader asks it for. */
  public CompletionStage<Void> ready() {
    return creator.ready();
  }

  /** Starts passing: one pass now, then every period. */
  public void start() {
    context.runOnContext(v -> {
      if (closed || started) {
        return;
      }
      started = true;
      timer = runtime.vertx().setPeriodic(Math.max(10, period.toMillis()), id -> pass());
      pass();
    });
  }

  /** Asks for a pass soon; callable from any thread. */
  public void kick() {
    if (!closed) {
      context.runOnContext(v -> pass());
    }
  }

  private void pass() {
    if (closed || !started) {
      return;
    }
    if (!runtime.isLeader()) {
      leading = false;
      return;
    }
    if (running) {
      again = true;
      return;
    }
    if (!leading) {
      leading = true;
      LOG.info("node {} leads: reconciling deployments", runtime.nodeId());
      reconciler.reset();
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
    if (closed) {
      return;
    }
    closed = true;
    creator.close();
    context.runOnContext(v -> {
      if (timer >= 0) {
        runtime.vertx().cancelTimer(timer);
      }
    });
  }
}
