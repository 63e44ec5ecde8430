package io.kiln.pools;

import io.kiln.pools.impl.InboundStream;
import io.kiln.pools.impl.StreamHub;
import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorNotFoundException;
import io.kiln.runtime.ActorUnavailableException;
import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.TimeoutPolicy;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * How the gateway and the controller talk to the pool of a deployment version on any node: finds its
 * {@link PoolManager} by name (and caches the handle, dropping it once the manager died), sends requests,
 * and withdraws them when the caller cancels.
 *
 * <p><b>Threading:</b> thread-safe and non-blocking; returned futures complete on Vert.x threads.
 *
 * <p><b>Errors:</b> every failure of {@link #infer} is an {@link InferenceException}: the pool's own
 * (INVALID_INPUT, {@link CapacityExceededException}, UNAVAILABLE, DEADLINE_EXCEEDED), UNAVAILABLE when no
 * live manager has the name or its node is gone, DEADLINE_EXCEEDED when the timeout passed before the
 * pool answered. A request whose manager died under it is re-sent once to a re-created manager, if the
 * lookup finds one in time (inference is idempotent).
 *
 * <p><b>Cancellation:</b> cancelling the request's {@link RequestContext#cancellation()} fails its answer at once
 * (UNAVAILABLE "request cancelled: reason") and sends {@link PoolManager#cancel} with the request's ticket, the
 * token's wire form: a queued request is unqueued (never runs), a running one's result is dropped. That is the one
 * way; cancelling a returned future only stops its caller waiting.
 */
public final class PoolClient {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PoolClient.class);

  /**
   * How much longer than the request's own timeout the actor call to the pool manager waits (its call deadline, on
   * the runtime's {@link io.kiln.runtime.time.Deadlines}), so that the pool's own DEADLINE_EXCEEDED answer arrives
   * first; the call deadline only catches a manager that never answers ({@link TimeoutPolicy#POOL_CALL_GRACE}).
   */
  public static final Duration CALL_GRACE = TimeoutPolicy.POOL_CALL_GRACE.timeout();
  /** How often a request whose pool manager died under it is re-sent. */
  private static final RetryPolicy RESEND = RetryPolicy.POOL_RESEND;
  /** Chunks a worker may send ahead of what the receiver consumed, unless the caller says otherwise. */
  public static final int DEFAULT_STREAM_WINDOW = 16;
  /** Tensor bytes one chunk may hold, unless the caller says otherwise. */
  public static final int DEFAULT_MAX_CHUNK_BYTES = 4 << 20;

  private final KilnRuntime runtime;
  private final String clientId;
  private final AtomicLong sequence = new AtomicLong();
  private final ConcurrentHashMap<String, CompletableFuture<ActorHandle<PoolManager>>> managers =
      new ConcurrentHashMap<>();

  private final StreamHub streams;

  public PoolClient(KilnRuntime runtime) {
    this.runtime = runtime;
    this.clientId = runtime.nodeId() + "/" + UUID.randomUUID().toString().substring(0, 8);
    this.streams = StreamHub.of(runtime);
  }

  /**
   * Sends {@code request}, which the caller already checked against the deployment's signature (the pool does not
   * check it again), to the pool on {@code nodeId}: the one entry point of a request, whose {@code context} says its
   * id, deadline (the pool fails it DEADLINE_EXCEEDED after that), trace and priority.
   *
   * @return the response; to withdraw the request, cancel its context's {@link Cancellation} (cancelling this
   *     future withdraws nothing)
   */
  public CompletableFuture<InferenceResponse> infer(RequestContext context, String deployment, String version,
                                                   String nodeId, ValidatedRequest request) {
    return send(context, deployment, version, nodeId, request.request(), true);
  }

  /** {@link #infer(RequestContext, String, String, String, ValidatedRequest)} for a request the pool checks itself. */
  public CompletableFuture<InferenceResponse> infer(RequestContext context, String deployment, String version,
                                                   String nodeId, InferenceRequest request) {
    return send(context, deployment, version, nodeId, request, false);
  }

  private CompletableFuture<InferenceResponse> send(RequestContext context, String deployment, String version,
                                                    String nodeId, InferenceRequest request, boolean validated) {
    CompletableFuture<InferenceResponse> result = new CompletableFuture<>();
    if (context.expired(System.nanoTime())) {
      result.completeExceptionally(InferenceException.deadlineExceeded("deadline passed before the request was sent"));
      return result;
    }
    String name = PoolNames.poolManager(deployment, version, nodeId);
    Call call = new Call(name, request, validated, context, clientId + "/" + sequence.incrementAndGet(), result, null);
    context.cancellation().onCancel(call); // the Call is the listener: nothing allocated for it
    call.send(true);
    return result;
  }

  /**
   * Sends a request to a streaming model's pool on {@code nodeId} and receives its answer chunk by chunk: the
   * worker sends each chunk straight to this node, at most {@code window} ahead of what {@code listener}
   * consumed (see {@link ResponseStream}). The listener hears every chunk in order and then exactly one of end
   * or error, on the calling Vert.x context (a new one when called off Vert.x). A stream is not re-sent when its
   * pool manager died under it (chunks may have gone out). Cancelling the context's {@link Cancellation} withdraws
   * the stream, from any thread: the listener hears nothing more, the request is unqueued if it still waits, and
   * otherwise its worker stops before the next chunk and frees its slot.
   *
   * @param context the stream's id, deadline (for the whole stream), trace, priority and token
   * @param window credit window in chunks, at least 1 ({@link #DEFAULT_STREAM_WINDOW})
   * @param maxChunkBytes the most tensor bytes per chunk ({@link #DEFAULT_MAX_CHUNK_BYTES}); a larger chunk fails
   *     the stream TOO_LARGE
   */
  public ResponseStream stream(RequestContext context, String deployment, String version, String nodeId,
                               ValidatedRequest request, int window, int maxChunkBytes, ChunkListener listener) {
    io.vertx.core.Context vc = io.vertx.core.Vertx.currentContext() != null ? io.vertx.core.Vertx.currentContext()
        : runtime.vertx().getOrCreateContext();
    String id = clientId + "/s" + sequence.incrementAndGet();
    InboundStream in = new InboundStream(streams, id, nodeId, window, vc, listener, request.request().id(),
        deployment, version);
    CompletableFuture<InferenceResponse> result = new CompletableFuture<>();
    Call call = null;
    if (context.expired(System.nanoTime())) {
      result.completeExceptionally(InferenceException.deadlineExceeded("deadline passed before the request was sent"));
    } else {
      call = new Call(PoolNames.poolManager(deployment, version, nodeId), request.request(), true, context, id,
          result, new StreamTarget(id, runtime.nodeId(), window, maxChunkBytes));
      call.send(false);
    }
    in.watch(result, call == null ? () -> { } : call, context.cancellation());
    return in;
  }

  /** Streams received on this node now (opened by any client of it). */
  public int openStreams() {
    return streams.inboundCount();
  }

  /** The pool's counts. */
  public CompletionStage<PoolStats> stats(String deployment, String version, String nodeId) {
    return callManager(deployment, version, nodeId, h -> h.call(PoolManager::stats));
  }

  /** The pool's full status (workers one by one). */
  public CompletionStage<PoolStatus> status(String deployment, String version, String nodeId) {
    return callManager(deployment, version, nodeId, h -> h.call(PoolManager::status));
  }

  /** Scales the pool; see {@link PoolManager#scale}. */
  public CompletionStage<Integer> scale(String deployment, String version, String nodeId, int workers) {
    return callManager(deployment, version, nodeId,
        h -> h.withTimeout(TimeoutPolicy.POOL_CONTROL.timeout()).callAsync(PoolManager::scale, workers));
  }

  /** Drains the pool; see {@link PoolManager#drain}. */
  public CompletionStage<Void> drain(String deployment, String version, String nodeId) {
    return callManager(deployment, version, nodeId,
        h -> h.withTimeout(TimeoutPolicy.POOL_CONTROL.timeout()).callAsync(PoolManager::drain));
  }

  /** Loads a model of a multiplexed pool; see {@link PoolManager#loadModel}. */
  public CompletionStage<Boolean> loadModel(String deployment, String version, String nodeId, String model) {
    return callManager(deployment, version, nodeId,
        h -> h.withTimeout(TimeoutPolicy.POOL_CONTROL.timeout()).callAsync(PoolManager::loadModel, model));
  }

  /** Unloads a model of a multiplexed pool; see {@link PoolManager#unloadModel}. */
  public CompletionStage<Integer> unloadModel(String deployment, String version, String nodeId, String model) {
    return callManager(deployment, version, nodeId, h -> h.callAsync(PoolManager::unloadModel, model));
  }

  /** The states of a multiplexed pool's models; see {@link PoolManager#models}. */
  public CompletionStage<java.util.Map<String, String>> models(String deployment, String version, String nodeId) {
    return callManager(deployment, version, nodeId, h -> h.call(PoolManager::models));
  }

  /** Tells the pool its node is leaving; see {@link PoolManager#leave}. */
  public CompletionStage<Void> leave(String deployment, String version, String nodeId) {
    return callManager(deployment, version, nodeId, h -> h.run(PoolManager::leave));
  }

  private <R> CompletionStage<R> callManager(String deployment, String version, String nodeId,
                                             Function<ActorHandle<PoolManager>, CompletionStage<R>> op) {
    String name = PoolNames.poolManager(deployment, version, nodeId);
    CompletableFuture<ActorHandle<PoolManager>> lookup = manager(name);
    return lookup.thenCompose(op).handle((r, e) -> {
      if (e != null) {
        Throwable t = Futures.unwrapCompletion(e);
        if (isGone(t)) {
          managers.remove(name, lookup);
        }
        throw new CompletionException(translate(name, t));
      }
      return r;
    });
  }

  private CompletableFuture<ActorHandle<PoolManager>> manager(String name) {
    CompletableFuture<ActorHandle<PoolManager>> f = managers.computeIfAbsent(name,
        n -> runtime.getActor(PoolManager.NAMESPACE, n, PoolManager.class).toCompletableFuture());
    if (f.isCompletedExceptionally()) {
      managers.remove(name, f); // a failed lookup is not cached: the next call looks again
    }
    return f;
  }

  /**
   * One request in flight, with where it was sent so that a cancel can follow it; as a Runnable, it withdraws the
   * request (its context's cancellation runs it; a stream's, through the stream, which stops receiving first).
   */
  private final class Call implements Runnable {
    final String name;
    final InferenceRequest request;
    final boolean validated;
    final RequestContext context;
    final String ticket;
    final CompletableFuture<InferenceResponse> result;
    final StreamTarget stream;
    volatile ActorHandle<PoolManager> sentTo;
    /** Times re-sent after its manager died (touched only by the one answer in flight). */
    int resends;

    Call(String name, InferenceRequest request, boolean validated, RequestContext context, String ticket,
         CompletableFuture<InferenceResponse> result, StreamTarget stream) {
      this.stream = stream;
      this.context = context;
      this.name = name;
      this.request = request;
      this.validated = validated;
      this.ticket = ticket;
      this.result = result;
    }

    void send(boolean mayRetry) {
      CompletableFuture<ActorHandle<PoolManager>> lookup = manager(name);
      lookup.whenComplete((h, err) -> {
        if (result.isDone()) {
          return;
        }
        if (err != null) {
          managers.remove(name, lookup);
          result.completeExceptionally(translate(name, Futures.unwrapCompletion(err)));
          return;
        }
        long timeoutMs = context.timeoutMs(System.nanoTime());
        if (timeoutMs == 0) {
          result.completeExceptionally(InferenceException.deadlineExceeded("deadline passed before the request was sent"));
          return;
        }
        sentTo = h;
        h.withTimeout(callTimeout(timeoutMs))
            .callAsync(PoolManager::submit, new PoolRequest(request, timeoutMs, ticket, validated, stream,
                context.trace(), context.priority()))
            .whenComplete((response, e) -> answered(lookup, response, e, mayRetry));
        if (context.cancellation().isCancelled()) {
          cancelRemote(); // cancelled while we were sending: the listener may have seen no target yet
        }
      });
    }

    private void answered(CompletableFuture<ActorHandle<PoolManager>> lookup, InferenceResponse response,
                          Throwable e, boolean mayRetry) {
      if (e == null) {
        result.complete(response);
        return;
      }
      Throwable t = Futures.unwrapCompletion(e);
      if (isGone(t)) {
        managers.remove(name, lookup);
        if (mayRetry && t instanceof ActorDiedException && !result.isDone() && RESEND.allows(resends + 1)) {
          resends++;
          if (LOG.isInfoEnabled()) {
            try (var log = io.kiln.pools.trace.RequestLog.open(requestId(), context.traceId())) {
              LOG.info("pool {} died under request {}; re-sending it (resend {} under {})", name, requestId(), resends,
                  RESEND);
            }
          }
          send(true);
          return;
        }
      }
      result.completeExceptionally(translate(name, t));
    }

    String requestId() {
      return !request.id().isEmpty() ? request.id() : !context.requestId().isEmpty() ? context.requestId() : ticket;
    }

    /** Withdraws the request: its answer fails at once, and its pool, once it was sent there, unqueues it. */
    @Override
    public void run() {
      String why = context.cancellation().reason();
      if (result.completeExceptionally(InferenceException.unavailable("request cancelled"
          + (why == null ? "" : ": " + why)))) {
        cancelRemote();
      }
    }

    void cancelRemote() {
      ActorHandle<PoolManager> h = sentTo;
      if (h != null) {
        h.call(PoolManager::cancel, ticket);
      }
    }
  }

  /** The actor call's timeout for a request given {@code timeoutMs}: that plus {@link #CALL_GRACE}. */
  static Duration callTimeout(long timeoutMs) {
    return Duration.ofMillis(timeoutMs).plus(CALL_GRACE);
  }

  private static boolean isGone(Throwable t) {
    return t instanceof ActorDiedException || t instanceof ActorNotFoundException || t instanceof NodeDiedException;
  }

  private static Throwable translate(String name, Throwable t) {
    if (t instanceof InferenceException) {
      return t;
    }
    if (t instanceof CallTimeoutException) {
      return new InferenceException(InferenceException.Kind.DEADLINE_EXCEEDED, "pool " + name + " did not answer in time", t);
    }
    if (t instanceof ActorNotFoundException) {
      return new InferenceException(InferenceException.Kind.UNAVAILABLE, "no pool " + name, t);
    }
    if (isGone(t) || t instanceof ActorUnavailableException) {
      return new InferenceException(InferenceException.Kind.UNAVAILABLE, "pool " + name + " is unavailable: "
          + t.getMessage(), t);
    }
    return t;
  }
}
