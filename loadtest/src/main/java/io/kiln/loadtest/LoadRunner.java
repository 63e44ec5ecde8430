package io.kiln.loadtest;

import io.kiln.loadtest.impl.ArrivalSchedule;
import io.kiln.loadtest.impl.ClosedLoopDriver;
import io.kiln.loadtest.impl.Driver;
import io.kiln.loadtest.impl.IntervalSeries;
import io.kiln.loadtest.impl.Measurements;
import io.kiln.loadtest.impl.OpenLoopDriver;
import io.kiln.loadtest.impl.Transport;
import io.vertx.core.Context;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.VerticleBase;
import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Runs load tests. {@link #run} blocks its caller (never call it on a Vert.x event loop) for at most
 * {@code warmup + duration + requestTimeout + 2 s}, plus one priming request (at most
 * {@code requestTimeout + 1 s}) and connection shutdown; requests go out on this
 * runner's event loops. One run at a time per runner; a runner can be reused for many runs (the
 * max-throughput search does) and must be closed.
 *
 * <p>Failures of the target never throw: they are counted as outcomes. Exceptions mean a bad
 * configuration (a request that cannot be encoded for the protocol) or an interrupted caller.
 */
public final class LoadRunner implements AutoCloseable {
  private static final long TICK_NS = TimeUnit.SECONDS.toNanos(1);
  private static final long POLL_NS = TimeUnit.MILLISECONDS.toNanos(10);
  private static final long DRAIN_GRACE_NS = TimeUnit.SECONDS.toNanos(2);

  private final Vertx vertx;
  private final boolean ownsVertx;
  private final Context[] contexts;
  private final LongSupplier clock;

  private LoadRunner(Vertx vertx, boolean ownsVertx, int eventLoops) {
    this.vertx = vertx;
    this.ownsVertx = ownsVertx;
    this.clock = System::nanoTime;
    this.contexts = eventLoopContexts(vertx, eventLoops);
  }

  /** A runner with its own Vert.x instance of {@code eventLoops} event loops (closed by {@link #close()}). */
  public static LoadRunner create(int eventLoops) {
    if (eventLoops < 1) {
      throw new IllegalArgumentException("eventLoops must be >= 1");
    }
    return new LoadRunner(Vertx.vertx(new VertxOptions().setEventLoopPoolSize(eventLoops)), true, eventLoops);
  }

  /** A runner sending from {@code eventLoops} contexts of a Vert.x instance the caller owns. */
  public static LoadRunner using(Vertx vertx, int eventLoops) {
    return new LoadRunner(vertx, false, eventLoops);
  }

  /** The default size: one event loop per two cores, at least one (the server usually shares the box). */
  public static int defaultEventLoops() {
    return Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
  }

  private static Context[] eventLoopContexts(Vertx vertx, int n) {
    Context[] result = new Context[n];
    int[] next = {0};
    // One verticle instance per event loop is the public way to obtain distinct event-loop contexts.
    Future<String> deployed = vertx.deployVerticle(() -> new VerticleBase() {
      @Override
      public Future<?> start() {
        synchronized (result) {
          result[next[0]++] = context;
        }
        return Future.succeededFuture();
      }
    }, new DeploymentOptions().setInstances(n));
    try {
      deployed.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("could not start the generator's event loops", e);
    }
    synchronized (result) {
      return Arrays.copyOf(result, n);
    }
  }

  /**
   * Runs one load test and returns its result.
   *
   * @throws IllegalArgumentException or IllegalStateException if a request cannot be sent with the
   *     chosen protocol (e.g. a BYTES tensor over http-binary)
   */
  public RunResult run(LoadOptions options, ProgressListener progress) {
    Transport transport = Transport.create(vertx, options);
    prime(transport, options);
    Instant startedAt = Instant.now();
    long t0 = clock.getAsLong();
    long measureStart = t0 + options.warmup().toNanos();
    long measureEnd = measureStart + options.duration().toNanos();
    long deadline = measureEnd + options.requestTimeout().toNanos() + DRAIN_GRACE_NS;
    Measurements m = new Measurements(measureStart);
    Driver driver = options.mode() == LoadMode.OPEN
        ? new OpenLoopDriver(transport, contexts, m, options.mix(), clock, t0,
            new ArrivalSchedule(options.rate(), options.warmup().toNanos()), measureEnd,
            options.maxRequests(), options.maxInFlight())
        : new ClosedLoopDriver(transport, contexts, m, options.mix(), clock, measureEnd, options.maxRequests(),
            options.connections());
    IntervalSeries warm = new IntervalSeries(m.warmup(), "warmup", t0);
    IntervalSeries measured = new IntervalSeries(m.measured(), "measure", measureStart);
    long endNs;
    try {
      driver.start();
      boolean warmupTicks = !options.warmup().isZero();
      // Warm-up intervals run from t0 and end exactly at measureStart; measured ones start there.
      long nextTick = warmupTicks ? Math.min(t0 + TICK_NS, measureStart) : measureStart + TICK_NS;
      while (true) {
        long now = clock.getAsLong();
        if ((driver.issuingDone() && m.inFlight() == 0) || now - deadline >= 0) {
          endNs = now;
          break;
        }
        if (now - nextTick >= 0) {
          boolean warmTick = warmupTicks && nextTick - measureStart <= 0;
          progress.onProgress((warmTick ? warm : measured).tick(now, m.inFlight(), false));
          nextTick = nextTick - measureStart < 0 ? Math.min(nextTick + TICK_NS, measureStart) : nextTick + TICK_NS;
          continue;
        }
        LockSupport.parkNanos(Math.min(POLL_NS, nextTick - now));
        if (Thread.interrupted()) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("load test interrupted");
        }
      }
    } finally {
      driver.stop(clock.getAsLong());
      m.settleOutstanding(clock.getAsLong());
      closeQuietly(transport);
    }
    progress.onProgress(measured.tick(Math.max(endNs, measureStart), 0, true));
    return result(options, startedAt, m, measured);
  }

  /**
   * Sends one unrecorded request and waits for it (at most the request timeout), so class loading, address
   * resolution and the first connect of the generator itself are not billed to the target. Without it,
   * an open-loop run starts with a backlog that is the client's fault.
   */
  private void prime(Transport transport, LoadOptions options) {
    java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
    contexts[0].runOnContext(v -> transport.send(0, outcome -> done.complete(null)));
    try {
      done.get(options.requestTimeout().toMillis() + 1_000, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
      // The target did not answer: the run itself will count that honestly.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("load test interrupted", e);
    }
  }

  private static RunResult result(LoadOptions o, Instant startedAt, Measurements m, IntervalSeries measured) {
    Measurements.Phase p = m.measured();
    long requests = p.completed();
    long errors = p.errors();
    long lastEnd = p.lastEndNs();
    double seconds = requests == 0 || lastEnd == Long.MIN_VALUE ? o.duration().toNanos() / 1e9
        : Math.max(1e-6, (lastEnd - m.measureStartNs()) / 1e9);
    return new RunResult(o.name(), o.describe(), startedAt.toString(),
        o.mode() == LoadMode.OPEN ? "intended" : "sent", round(seconds), requests, requests - errors, errors,
        round(requests / seconds), round((requests - errors) / seconds), o.mode() == LoadMode.OPEN ? o.rate() : null,
        measured.latency(), p.outcomes(), measured.samples(), measured.distribution());
  }

  private static double round(double v) {
    return Math.round(v * 1000) / 1000.0;
  }

  private static void closeQuietly(Transport transport) {
    try {
      transport.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      // Closing only releases connections; results are already settled.
    }
  }

  @Override
  public void close() {
    if (ownsVertx) {
      try {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        // Nothing left to measure; a slow close only delays exit.
      }
    }
  }
}
