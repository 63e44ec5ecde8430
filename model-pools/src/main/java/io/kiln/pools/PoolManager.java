package io.kiln.pools;

import io.kiln.pools.impl.DispatchTimes;
import io.kiln.pools.impl.HealthProber;
import io.kiln.pools.impl.LoadReporter;
import io.kiln.pools.impl.PoolDispatcher;
import io.kiln.pools.impl.PoolWorkers;
import io.kiln.pools.impl.VertxTimers;
import io.kiln.runtime.ActorContext;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.Resources;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.SchedulingStrategy;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Context;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The scheduler of one deployment version's pool on one node: a zero-resource actor named
 * {@code kiln/pool/<deployment>@<version>/<node>} in namespace {@value #NAMESPACE}, pinned to its node,
 * that queues requests, forms dynamic batches and dispatches them to its {@link ModelWorker}s. Create it
 * with {@link #getOrCreate} (or {@link #options}); reach it from any node with {@link PoolClient}.
 *
 * <p><b>Threading:</b> runs in {@link ExecutionMode#EVENT_LOOP} mode with a high {@code max_concurrency}:
 * every method runs on the actor's event loop and returns at once (slow work completes the returned
 * stage later). Never call the methods directly; call them through an {@code ActorHandle}.
 *
 * <p><b>Workers:</b> the constructor get-or-creates the named, detached workers, so a manager that is
 * restarted, or re-created after it died, adopts the live workers of its predecessor without reloading
 * their models. A worker that fails under a batch (its model threw, it died, or it hung past the call
 * timeout) leaves the rotation; its requests are re-queued once, each alone; it is restarted, reloading
 * its model, and rejoins once it answers, or with no restarts left it is dropped and listed DEAD in
 * {@link #status()}.
 *
 * <p><b>Errors</b> of {@link #infer}/{@link #submit}: {@link InferenceException} INVALID_INPUT (a request
 * not {@link PoolRequest#validated() validated} by its sender is checked with the model's
 * {@link RequestValidator} at once, alone), {@link CapacityExceededException} (queue full),
 * UNAVAILABLE (draining, closed, a worker failed twice under it), DEADLINE_EXCEEDED (it never runs once
 * its deadline passed). See {@link io.kiln.pools.impl.PoolDispatcher}.
 *
 * <p><b>Streams.</b> A pool of a streaming model ({@link ModelSpec#streaming()}) takes only stream requests
 * ({@link PoolRequest#stream()} set; {@link PoolClient#stream} sends them): up to {@code max_batch_size} of them
 * run on one worker at once, which steps them together, sending each chunk straight to the stream's
 * receiver; the request completes, without outputs, when its stream is over. Other pools refuse streams.
 * Each worker of such a pool is {@code max_batch_size} stream slots to the dispatcher (its counts: workers,
 * busy, idle, are slots): a stream dispatched to a slot joins the worker's step loop at its next step, so up to
 * {@code max_batch_size} streams share one worker's steps, joining and leaving as they come and end.
 *
 * <p><b>Sequences.</b> A pool of a sequence model ({@link ModelSpec#sequence()}) runs each sequence on the worker
 * that holds its state, one request of it at a time, frees idle ones and reports those whose worker failed as lost
 * (see {@link io.kiln.pools.impl.PoolSequences}; docs/sequences.md).
 *
 * <p>It publishes its load every ~100 ms on the event bus for the {@link PoolLoadBoard}s of all nodes.
 *
 * <p><b>Health:</b> every {@code health.period} it probes each worker in rotation on its serving thread;
 * one that does not answer within {@code health.timeout} is restarted (see
 * {@link io.kiln.pools.impl.HealthProber}), and {@link #status()} reports the last such repair.
 */
public final class PoolManager implements AutoCloseable {

  /** Namespace of the pools' actors. */
  public static final String NAMESPACE = "kiln";
  /** Requests one manager may hold in progress (queued or executing) before its mailbox pushes back. */
  public static final int MAX_CONCURRENCY = 100_000;

  private final PoolSpec spec;
  private final String managerId;
  private final Context context;
  private final PoolDispatcher dispatcher;
  private final PoolWorkers workers;
  private final LoadReporter reporter;
  private final HealthProber health;
  private final io.kiln.pools.impl.PoolSequences sequences; // null unless the model keeps sequences
  private final DispatchTimes times = new DispatchTimes();
  /** The tokens of the requests a cancel may name, by ticket (the wire form of their callers' tokens). */
  private final Map<String, Cancellation> tickets = new HashMap<>();
  private CompletionStage<Void> drained;
  private boolean draining;
  private boolean leaving;
  private boolean closed;

  /** Starts the pool: a non-blocking constructor; workers are created or adopted in the background. */
  public PoolManager(PoolSpec spec) {
    ActorContext ctx = ActorContext.current();
    KilnRuntime runtime = ctx.runtime();
    this.spec = spec;
    this.managerId = ctx.actorId();
    this.context = ctx.vertxContext();
    MeterRegistry registry = runtime.localService(MeterRegistry.class).orElseGet(SimpleMeterRegistry::new);
    // A streaming worker is max_batch_size stream slots (lanes) to the dispatcher, one stream each: its streams
    // batch by joining its step loop, not by being dispatched together.
    PoolConfig dispatch = spec.model().streaming()
        ? spec.config().toBuilder().maxBatchSize(1).maxBatchDelay(Duration.ZERO).build() : spec.config();
    this.dispatcher = new PoolDispatcher(dispatch, System::nanoTime, new VertxTimers(context), this::onContext,
        this::workerFailed, registry,
        PoolDispatcher.meterTags(spec.deployment(), spec.version(), spec.nodeId()), validator(spec),
        spec.repository(), runtime.localService(io.kiln.pools.trace.Spans.class).orElse(io.kiln.pools.trace.Spans.OFF),
        spec.repository() == null ? spec.model().signature() : null);
    dispatcher.limitParallelism(parallelism(spec, Runtime.getRuntime().availableProcessors()));
    dispatcher.dispatchAtTurnEnd(r -> io.kiln.runtime.LoopTurns.atTurnEnd(context, r));
    this.sequences = spec.model().sequence() == null || spec.repository() != null ? null
        : new io.kiln.pools.impl.PoolSequences(spec.deployment(), spec.model().sequence(), stateTakenWhole(spec.model()),
            spec.config().maxQueued(), dispatcher, new VertxTimers(context), System::nanoTime, registry,
            PoolDispatcher.meterTags(spec.deployment(), spec.version(), spec.nodeId()));
    Duration callTimeout = max(ActorHandle.DEFAULT_CALL_TIMEOUT, spec.config().defaultTimeout().multipliedBy(2));
    this.workers = new PoolWorkers(runtime, spec, context, dispatcher, times, System::nanoTime, callTimeout,
        this::workersChanged);
    this.reporter = new LoadReporter(context, spec, managerId, dispatcher::stats, dispatcher::queueDepth, this::ready,
        () -> draining || leaving, dispatcher::loadedModels);
    // A probe call outlives the health timeout, so the prober's own timer always decides.
    Duration probeTimeout = spec.health().timeout().multipliedBy(2).plusSeconds(1);
    this.health = new HealthProber(spec.health(), new VertxTimers(context), r -> context.runOnContext(v -> r.run()),
        () -> workers.probeTargets(probeTimeout), this::restartSilent);
    reporter.start();
    workers.start();
    health.start();
  }

  /**
   * How many batches this node's cores run at once for {@code spec}'s workers: cores divided by each batch's
   * intra-op threads, for CPU workers with a set thread count; unlimited for GPU workers (the device, not the cores,
   * runs them) and for the engine's default threads (unknown). On a node pinned to one core, two single-threaded
   * workers can run one batch at a time: the dispatcher then lets the second batch fill instead of time-slicing
   * two small ones (see {@link PoolDispatcher#limitParallelism}).
   */
  static int parallelism(PoolSpec spec, int cores) {
    int intraOp = spec.model().intraOpThreads();
    if (spec.workerResources().get(Resources.GPU) > 0 || intraOp <= 0) {
      return Integer.MAX_VALUE;
    }
    return Math.max(1, cores / intraOp);
  }

  // A state the model takes whole (Silero VAD's [2, -1, 128]) cannot be stacked: each sequence request runs alone.
  private static boolean stateTakenWhole(ModelSpec model) {
    java.util.Set<String> state = model.sequence().stateInputs();
    return model.inputs().stream().anyMatch(t -> state.contains(t.name()) && !t.scalar() && !t.batched());
  }

  private void restartSilent(String worker, String why) {
    if (sequences != null) {
      sequences.workerLost(worker, "it stopped answering health probes: " + why);
    }
    workers.restartSilent(worker, why);
  }

  // A multiplexed pool checks each request against its own model's signature.
  private static java.util.function.Consumer<InferenceRequest> validator(PoolSpec spec) {
    if (spec.repository() == null) {
      return new RequestValidator(spec.deployment(), spec.model().signature(), 0)::validate;
    }
    Map<String, RequestValidator> byModel = new HashMap<>();
    spec.repository().byName().forEach((name, model) -> byModel.put(name, new RequestValidator(name, model.signature(), 0)));
    return request -> byModel.get(spec.repository().modelOf(request)).validate(request);
  }

  /**
   * Runs {@code r} on this manager's context: at once when already there (a worker's answer is completed on the
   * context that called it, this one), else queued to it. Saves a trip through the event loop's task queue per
   * batch; the dispatcher is written for completions that arrive inline.
   */
  private void onContext(Runnable r) {
    if (io.vertx.core.Vertx.currentContext() == context) {
      r.run();
    } else {
      context.runOnContext(v -> r.run());
    }
  }

  /**
   * The options the manager of {@code spec} is created with: named, namespace {@value #NAMESPACE},
   * detached, get-if-exists, hard affinity to its node, no resources, event-loop mode,
   * {@value #MAX_CONCURRENCY} concurrent calls, restarted without limit (its constructor only adopts).
   */
  public static ActorOptions options(PoolSpec spec) {
    return ActorOptions.builder().name(spec.managerName()).namespace(NAMESPACE).detached().getIfExists(true)
        .resources(Resources.NONE).strategy(SchedulingStrategy.onNode(spec.nodeId()))
        .mode(ExecutionMode.EVENT_LOOP).maxConcurrency(MAX_CONCURRENCY).maxPendingCalls(MAX_CONCURRENCY)
        .maxRestarts(RetryPolicy.UNLIMITED).build();
  }

  /** Gets the live manager of {@code spec}'s pool or creates it on {@code spec.nodeId()}; see {@link #options}. */
  public static CompletionStage<ActorHandle<PoolManager>> getOrCreate(KilnRuntime runtime, PoolSpec spec) {
    return runtime.actor(PoolManager::new, spec).options(options(spec)).remote();
  }

  /** {@link #submit} without a ticket: not cancellable. {@code timeoutMs <= 0} means the pool's default. */
  public CompletionStage<InferenceResponse> infer(InferenceRequest request, long timeoutMs) {
    return submit(new PoolRequest(request, timeoutMs, null, false, null, null, null));
  }

  /**
   * Queues a request and completes with its response: the deployment's name and version, the request's
   * id, its outputs, and parameters {@code kiln_node}, {@code kiln_queue_ms} and {@code kiln_compute_ms}
   * (the last two once a worker ran it). The deadline counts from the request's arrival here;
   * {@code timeoutMs <= 0} means the pool's default timeout. Errors: see the class comment.
   */
  public CompletionStage<InferenceResponse> submit(PoolRequest call) {
    long arrived = System.nanoTime();
    long timeoutMs = call.timeoutMs() > 0 ? Math.min(call.timeoutMs(), PoolConfig.MAX_TIMEOUT.toMillis())
        : spec.config().defaultTimeout().toMillis();
    InferenceRequest request = call.request();
    boolean streams = spec.model().streaming();
    if (streams != (call.stream() != null)) {
      return CompletableFuture.failedFuture(InferenceException.invalid(streams
          ? "model '" + spec.deployment() + "' streams its answers: call generate_stream, generate or ModelStreamInfer"
          : "model '" + spec.deployment() + "' does not stream"));
    }
    String ticket = call.ticket();
    // The pool's own context of the request's wire form; a ticket is a token a cancel may come for.
    Cancellation cancellation = ticket == null ? Cancellation.NONE : Cancellation.create();
    RequestContext context = RequestContext.of(call.requestId(), arrived + timeoutMs * 1_000_000, call.trace(),
        call.priority(), cancellation);
    CompletableFuture<List<Tensor>> outputs = sequences != null
        ? sequences.submit(request, context, call.validated())
        : dispatcher.submit(request, context, call.validated(), call.stream());
    if (ticket != null && !outputs.isDone()) {
      tickets.put(ticket, cancellation);
    }
    reporter.changed();
    CompletableFuture<InferenceResponse> response = new CompletableFuture<>();
    // Completes on this context: the dispatcher settles on it, and cancel() runs on it.
    outputs.whenComplete((out, err) -> {
      if (ticket != null) {
        tickets.remove(ticket, cancellation);
      }
      DispatchTimes.Stamp stamp = times.take(request);
      if (err != null) {
        response.completeExceptionally(Futures.unwrapCompletion(err));
      } else {
        response.complete(new InferenceResponse(request.id(), spec.deployment(), spec.version(), out,
            parameters(arrived, stamp)));
      }
      reporter.changed();
    });
    return response;
  }

  // Immutable already, so InferenceResponse's Map.copyOf keeps it as it is (a LinkedHashMap was copied again).
  private Map<String, Object> parameters(long arrived, DispatchTimes.Stamp stamp) {
    if (stamp == null || stamp.doneNanos() == 0) {
      return Map.of("kiln_node", spec.nodeId());
    }
    return Map.of("kiln_node", spec.nodeId(), "kiln_queue_ms", millis(stamp.dispatchedNanos() - arrived),
        "kiln_compute_ms", millis(stamp.doneNanos() - stamp.dispatchedNanos()));
  }

  /**
   * Withdraws the request submitted with {@code ticket}: unqueued if it is still waiting (its response
   * fails UNAVAILABLE "cancelled"), its result discarded if a worker is running it.
   *
   * @return whether a pending request had that ticket
   */
  public boolean cancel(String ticket) {
    Cancellation c = tickets.remove(ticket);
    return c != null && c.cancel("cancelled by the client");
  }

  /**
   * Loads {@code model} of a multiplexed pool onto one of its workers unless one holds it (or joins the load
   * running); completes with whether a load ran. Errors: NOT_FOUND (not in the repository), INVALID_INPUT (the pool
   * is not multiplexed), INTERNAL (the model failed to load), {@link CapacityExceededException} (as many loads run
   * as {@code max_concurrent_loads} allows), UNAVAILABLE.
   */
  public CompletionStage<Boolean> loadModel(String model) {
    CompletionStage<Boolean> out = dispatcher.loadModel(model);
    out.whenComplete((v, e) -> reporter.publish());
    return out;
  }

  /** Closes {@code model} on every worker of a multiplexed pool that holds it; completes with how many did. */
  public CompletionStage<Integer> unloadModel(String model) {
    CompletionStage<Integer> out = dispatcher.unloadModel(model);
    reporter.publish();
    return out;
  }

  /**
   * Each model of a multiplexed pool with its state: {@code READY} (a worker holds it), {@code LOADING}, or
   * {@code UNAVAILABLE} (not loaded; a request loads it); empty for a pool of one model.
   */
  public Map<String, String> models() {
    return dispatcher.modelStates();
  }

  /** The dispatcher's counts now. */
  public PoolStats stats() {
    return dispatcher.stats();
  }

  /** Load, workers one by one, configuration. */
  public PoolStatus status() {
    return new PoolStatus(spec.deployment(), spec.version(), spec.nodeId(), managerId, ready(), draining || leaving,
        workers.liveCount(), spec.config(), dispatcher.stats(), workers.status(), workers.lastRepair());
  }

  /**
   * Scales the pool towards {@code workers} live workers, adding only as many as the node's unreserved
   * resources hold now; completes with the live count once added workers are warm (or failed) and removed
   * ones finished their batch and were killed. Fails with {@link IllegalStateException} once draining.
   */
  public CompletionStage<Integer> scale(int workers) {
    if (draining || closed) {
      return CompletableFuture.failedFuture(new IllegalStateException("pool " + spec.managerName() + " is "
          + (closed ? "closed" : "draining")));
    }
    return this.workers.scale(workers);
  }

  /**
   * Retires the pool: refuses new requests (UNAVAILABLE "pool is draining"), dispatches what is queued
   * without waiting for fuller batches, waits for what executes, then kills the workers. Completes once
   * they are gone; the manager itself stays until killed. Idempotent.
   */
  public CompletionStage<Void> drain() {
    if (drained == null) {
      draining = true;
      reporter.publish();
      drained = dispatcher.drain().thenCompose(v -> workers.retireAll());
    }
    return drained;
  }

  /**
   * Its node is leaving the cluster (a graceful shutdown): the pool reports itself draining but still ready (see
   * {@link PoolLoad#leaving()}), so routers elsewhere stop sending to it, while it goes on serving what still
   * arrives (requests sent before they saw the report, and those its own gateway has nowhere else to send).
   * Unlike {@link #drain()} it refuses nothing and keeps its workers; the node closes it once it is idle.
   * Idempotent.
   */
  public void leave() {
    if (!leaving) {
      leaving = true;
      reporter.publish();
    }
  }

  /**
   * Stops this manager: fails what is queued or executing with UNAVAILABLE "pool is closed" and stops
   * reporting load, but leaves the workers alive, so that a restarted or re-created manager adopts them
   * (use {@link #drain()} first to retire the pool). The runtime calls it when the actor dies or restarts.
   * Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    health.stop();
    if (sequences != null) {
      sequences.close();
    }
    workers.close();
    reporter.stop();
    dispatcher.close();
    tickets.clear();
    times.clear();
  }

  private boolean ready() {
    return !closed && !draining && workers.ready();
  }

  private void workerFailed(String id, Throwable cause) {
    if (sequences != null) {
      sequences.workerLost(id, cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName());
    }
    workers.workerFailed(id, cause);
  }

  private void workersChanged() {
    reporter.changed();
  }

  private static double millis(long nanos) {
    return Math.round(nanos / 1e3) / 1e3;
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
