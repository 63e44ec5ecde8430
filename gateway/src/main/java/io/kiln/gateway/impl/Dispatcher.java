package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.PoolDirectory;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.Cancellation;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.RequestContext;
import io.kiln.pools.ValidatedRequest;
import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorNotFoundException;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.NodeUnreachableException;
import io.kiln.runtime.time.Deadlines;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * The protocol-neutral half of inference: applies the deadline, routes, sends to the chosen pool and brings
 * the answer back to the caller's Vert.x context. Call {@link #dispatch} on an event loop; it never blocks.
 */
final class Dispatcher {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Dispatcher.class);

  /**
   * One request in flight. {@link #cancel()} fails it and withdraws it from its pool (idempotent); so does its
   * deadline. Withdrawing is cancelling the request's token: its pool call listens to that.
   */
  static final class Call extends Deadlines.Entry {
    private final Promise<InferenceResponse> promise;
    private final Cancellation cancellation;
    private long timeoutMillis;

    private Call(Promise<InferenceResponse> promise, Cancellation cancellation) {
      this.promise = promise;
      this.cancellation = cancellation;
    }

    @Override
    protected void expired() {
      String why = "deadline of " + timeoutMillis + " ms passed";
      if (promise.tryFail(InferenceException.deadlineExceeded(why))) {
        cancellation.cancel(why);
      }
    }

    Future<InferenceResponse> result() {
      return promise.future();
    }

    void cancel() {
      if (promise.tryFail(new InferenceException(InferenceException.Kind.UNAVAILABLE, "request cancelled by the client"))) {
        cancellation.cancel("cancelled by the client");
      }
    }
  }

  private final Vertx vertx;
  private final PoolDirectory pools;
  private final Router router;
  private final GatewayMetrics metrics;
  private final long defaultTimeoutMillis;
  private final LongSupplier nanoClock;
  private final Predicate<String> unmetered;
  /** The calls' deadlines: one list and at most one timer per event loop, not a timer per call. */
  private final Deadlines deadlines;
  /** The node each sequence's requests go to (requests carrying {@code sequence_id}). */
  private final SequenceRoutes sequences = new SequenceRoutes();

  /** @param unmetered models whose routing decisions are counted out of sight (the directory's internal ones) */
  Dispatcher(Vertx vertx, PoolDirectory pools, Router router, GatewayMetrics metrics, long defaultTimeoutMillis,
             LongSupplier nanoClock, Predicate<String> unmetered) {
    this.vertx = vertx;
    this.pools = pools;
    this.router = router;
    this.metrics = metrics;
    this.defaultTimeoutMillis = defaultTimeoutMillis;
    this.nanoClock = nanoClock;
    this.unmetered = unmetered;
    this.deadlines = Deadlines.of(vertx);
  }

  /**
   * Routes and sends a validated request in its {@link RequestContext}, made here of the edge's {@code trace} (null:
   * untraced) and {@code cancellation} (the exchange's token: the client going away, or the call's deadline passing,
   * cancels it, and the pool call withdraws on that) with the request's deadline. Routing failures (no ready pool,
   * all full) fail the returned call's result rather than throw.
   */
  Call dispatch(ModelInfo model, ValidatedRequest request, Hints hints, io.kiln.pools.trace.RequestTrace trace,
                Cancellation cancellation) {
    Context context = vertx.getOrCreateContext();
    Call call = new Call(Promise.promise(), cancellation);
    long timeoutMillis = hints.timeoutMillis() > 0 ? Math.min(hints.timeoutMillis(), defaultTimeoutMillis)
        : defaultTimeoutMillis;
    long deadline = nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    if (model.multiplexed() != null) { // a repository model: its deployment's pools serve it, told which model
      request = request.withParameter(io.kiln.pools.ModelRepository.MODEL_ID, model.name());
    }
    // One object per request, as the Duration the pool directory used to make of the deadline was.
    RequestContext rc = RequestContext.of(request.request().id(), deadline, trace, RequestContext.Priority.NORMAL,
        cancellation);
    if (!send(call, context, model, request, hints, rc, java.util.Set.of())) {
      return call;
    }
    call.timeoutMillis = timeoutMillis;
    deadlines.add(call, deadline);
    call.promise.future().onComplete(ar -> {
      if (Vertx.currentContext() == context) {
        call.remove();
      } else {
        context.runOnContext(v -> call.remove()); // the deadline list is the context's own
      }
    });
    return call;
  }

  /**
   * Routes and sends; returns false if routing itself failed (the call is then failed). A pool that
   * refuses for capacity although its load report said it had room (the report was up to 100 ms old) is
   * skipped once and the request routed again, unless it was pinned to that node; so is, once per node, a pool
   * lost under the request (its node's event-bus connection broke, its node left, the pool is gone).
   */
  private boolean send(Call call, Context context, ModelInfo model, ValidatedRequest request, Hints hints,
                       RequestContext rc, java.util.Set<String> refused) {
    PoolEndpoint target;
    CompletableFuture<InferenceResponse> sent;
    try {
      String deployment = model.deployment();
      List<PoolEndpoint> all = pools.pools(deployment, model.version());
      List<PoolEndpoint> candidates = refused.isEmpty() ? all
          : all.stream().filter(p -> !refused.contains(p.nodeId())).toList();
      String pinned = hints.pinnedNode() != null ? hints.pinnedNode()
          : sequences.node(model.name(), request.request().parameters(), all);
      Router.Route route = router.route(deployment, candidates, pinned, multiplexedModel(model, request));
      metrics.routed(route.reason(), unmetered.test(model.name()));
      target = route.target();
      sent = pools.send(target, deployment, model.version(), request, rc);
    } catch (RuntimeException e) {
      call.promise.tryFail(e);
      return false;
    }
    String node = target.nodeId();
    // The pool client answers on the calling context already (a local pool's reply is completed there): then
    // the answer is handled at once, without another trip through the event loop's task queue.
    sent.whenComplete((response, error) -> {
      if (Vertx.currentContext() == context) {
        answered(call, context, model, request, hints, rc, refused, node, response, error);
      } else {
        context.runOnContext(v -> answered(call, context, model, request, hints, rc, refused, node, response,
            error));
      }
    });
    return true;
  }

  private void answered(Call call, Context context, ModelInfo model, ValidatedRequest request, Hints hints,
                        RequestContext rc, java.util.Set<String> refused, String node, InferenceResponse response,
                        Throwable error) {
    if (error != null) {
      Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
          ? error.getCause() : error;
      // A pool lost under the request (its node's connection broke, its node left, the pool is gone) is skipped like
      // a full pool: inference is idempotent, so the request goes to another node's pool, once per node, within its
      // deadline.
      boolean lost = poolLost(cause);
      if ((lost || cause instanceof CapacityExceededException && refused.isEmpty())
          && hints.pinnedNode() == null && !SequenceRoutes.names(request.request().parameters())
          && !call.promise.future().isComplete()
          && nanoClock.getAsLong() < rc.deadlineNanos()) {
        java.util.Set<String> skip = new java.util.HashSet<>(refused);
        skip.add(node);
        if (LOG.isDebugEnabled()) {
          try (var log = io.kiln.pools.trace.RequestLog.open(rc.trace())) {
            LOG.debug("request {}: pool on node {} {}; routing it once more", request.request().id(), node,
                lost ? "is unreachable or gone" : "was full");
          }
        }
        if (!send(call, context, model, request, hints, rc, skip)) {
          call.promise.tryFail(cause); // nowhere else to go: the pool's own answer stands
        }
        return;
      }
      call.promise.tryFail(error);
    } else if (response == null) {
      call.promise.tryFail(new IllegalStateException("pool on node '" + node + "' answered null"));
    } else {
      call.promise.tryComplete(withNode(response, node));
    }
  }

  /**
   * Whether the pool call failed because the pool is lost to this request: its node's event-bus connection broke
   * ({@link NodeUnreachableException}: the node may have died), its node left or its manager died
   * ({@link ActorDiedException}, {@link NodeDiedException}), or no manager has its name any more
   * ({@link ActorNotFoundException}). The pool client's UNAVAILABLE answer carries the runtime's exception as cause.
   */
  private static boolean poolLost(Throwable error) {
    int depth = 0;
    for (Throwable t = error; t != null && depth < 8; t = t.getCause(), depth++) {
      if (t instanceof NodeUnreachableException || t instanceof ActorDiedException || t instanceof NodeDiedException
          || t instanceof ActorNotFoundException) {
        return true;
      }
    }
    return false;
  }

  /** Where it ran is the pool's to say; if it did not, it ran where it was sent. */
  // The model a multiplexed deployment's request names: a repository model's own name (set as model_id by
  // dispatch), or the model_id parameter a client sent to the deployment itself.
  private static String multiplexedModel(ModelInfo model, ValidatedRequest request) {
    Object id = request.request().parameters().get(io.kiln.pools.ModelRepository.MODEL_ID);
    return id instanceof String s ? s : null;
  }

  private static InferenceResponse withNode(InferenceResponse r, String node) {
    if (r.parameters().containsKey(Fields.KILN_NODE)) {
      return r;
    }
    Map<String, Object> params = new HashMap<>(r.parameters());
    params.put(Fields.KILN_NODE, node);
    return new InferenceResponse(r.id(), r.modelName(), r.modelVersion(), r.outputs(), params);
  }
}
