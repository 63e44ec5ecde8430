package io.kiln.loadtest;

import io.kiln.loadtest.impl.Transport;
import io.vertx.core.Context;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.VerticleBase;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Runs load tests. {@link #run} blocks its caller (never call it on a Vert.x event loop) for at most
 * {@code warmup + duration + requestTimeout + 2 s}, plus one priming request (at most
 * {@code requestTimeout + 1 s}) and connection shutdown; requests go out on this
 * runner's event loops. {@link #start} runs one in the background instead ({@link LiveRun}). A runner can be reused
 * for many runs (the max-throughput search does), runs may overlap (for a clean measurement, run one at a time), and
 * it must be closed.
 *
 * <p>Failures of the target never throw: they are counted as outcomes. Exceptions mean a bad
 * configuration (a request that cannot be encoded for the protocol) or an interrupted caller.
 */
public final class LoadRunner implements AutoCloseable {

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
    return begin(options).drive(progress);
  }

  /**
   * Starts one load test on a thread of its own and returns at once: watch it with {@link LiveRun#snapshot()}, end
   * it with {@link LiveRun#finish()} (or let it run its duration). Runs of one runner may overlap; they share its
   * event loops.
   */
  public LiveRun start(LoadOptions options) {
    return begin(options).inBackground();
  }

  private LiveRun begin(LoadOptions options) {
    Transport transport = Transport.create(vertx, options);
    if (options.source() == null) { // a run with requests of its own sends those and nothing else
      prime(transport, options);
    }
    return new LiveRun(options, transport, contexts, clock);
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

  static void closeQuietly(Transport transport) {
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
