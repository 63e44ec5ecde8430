package io.kiln.deploy.node;

import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * The wait of a node's drain: every {@link DrainOptions#poll()} it samples the gateway's requests in flight and
 * its pools' backlog, and ends once all are zero and the linger has passed (drained), once the grace has passed
 * (whatever is left), or at the first sample after {@link #cutShort()}. Grace and linger are measured on the
 * options' clock; the polls are Vert.x timers. Never fails; thread-safe.
 */
final class NodeDrain {

  /** What a node's pools still hold. */
  record Backlog(int queued, int running) {
    static final Backlog NONE = new Backlog(0, 0);

    boolean idle() {
      return queued == 0 && running == 0;
    }
  }

  private final Vertx vertx;
  private final DrainOptions options;
  private final IntSupplier gatewayInFlight;
  private final Supplier<CompletionStage<Backlog>> backlog;
  private final CompletableFuture<DrainReport> done = new CompletableFuture<>();
  private volatile boolean cut;
  private long startedNanos;

  NodeDrain(Vertx vertx, DrainOptions options, IntSupplier gatewayInFlight,
            Supplier<CompletionStage<Backlog>> backlog) {
    this.vertx = vertx;
    this.options = options;
    this.gatewayInFlight = gatewayInFlight;
    this.backlog = backlog;
  }

  /** Starts waiting; the grace and linger count from now. Call once. */
  CompletionStage<DrainReport> run() {
    startedNanos = options.nanoClock().getAsLong();
    sample();
    return done;
  }

  /** Ends the drain at its next sample, as a second stop signal asks. */
  void cutShort() {
    cut = true;
  }

  private void sample() {
    CompletionStage<Backlog> b;
    try {
      b = backlog.get();
    } catch (RuntimeException e) {
      b = CompletableFuture.completedFuture(Backlog.NONE);
    }
    b.handle((pools, err) -> pools == null ? Backlog.NONE : pools).thenAccept(this::decide);
  }

  private void decide(Backlog pools) {
    int inFlight = gatewayInFlight.getAsInt();
    long elapsed = options.nanoClock().getAsLong() - startedNanos;
    Duration took = Duration.ofNanos(Math.max(0, elapsed));
    boolean idle = inFlight == 0 && pools.idle();
    if (idle && elapsed >= options.linger().toNanos()) {
      done.complete(new DrainReport(true, true, took, 0, 0, 0, false));
    } else if (cut || elapsed >= options.grace().toNanos()) {
      done.complete(new DrainReport(true, idle, took, inFlight, pools.queued(), pools.running(), cut && !idle));
    } else {
      vertx.setTimer(Math.max(1, options.poll().toMillis()), id -> sample());
    }
  }
}
