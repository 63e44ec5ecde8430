package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.PoolDirectory;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The protocol-neutral half of inference: applies the deadline, routes, sends to the chosen pool and brings
 * the answer back to the caller's Vert.x context. Call {@link #dispatch} on an event loop; it never blocks.
 */
final class Dispatcher {

  /** One request in flight. {@link #cancel()} withdraws it from its pool (idempotent). */
  static final class Call {
    private final Promise<InferenceResponse> promise;
    private volatile CompletableFuture<InferenceResponse> sent;

    private Call(Promise<InferenceResponse> promise) {
      this.promise = promise;
    }

    Future<InferenceResponse> result() {
      return promise.future();
    }

    void cancel() {
      if (promise.tryFail(new InferenceException(InferenceException.Kind.UNAVAILABLE, "request cancelled by the client"))) {
        withdraw();
      }
    }

    private void withdraw() {
      CompletableFuture<InferenceResponse> f = sent;
      if (f != null) {
        f.cancel(false);
      }
    }
  }

  private final Vertx vertx;
  private final PoolDirectory pools;
  private final Router router;
  private final GatewayMetrics metrics;
  private final long defaultTimeoutMillis;
  private final LongSupplier nanoClock;

  Dispatcher(Vertx vertx, PoolDirectory pools, Router router, GatewayMetrics metrics, long defaultTimeoutMillis,
             LongSupplier nanoClock) {
    this.vertx = vertx;
    this.pools = pools;
    this.router = router;
    this.metrics = metrics;
    this.defaultTimeoutMillis = defaultTimeoutMillis;
    this.nanoClock = nanoClock;
  }

  /**
   * Routes and sends a validated request. Routing failures (no ready pool, all full) fail the returned call's
   * result rather than throw.
   */
  Call dispatch(ModelInfo model, InferenceRequest request, Hints hints) {
    Context context = vertx.getOrCreateContext();
    Call call = new Call(Promise.promise());
    long timeoutMillis = hints.timeoutMillis() > 0 ? Math.min(hints.timeoutMillis(), defaultTimeoutMillis)
        : defaultTimeoutMillis;
    long deadline = nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    PoolEndpoint target;
    try {
      Router.Route route = router.route(model.name(), pools.pools(model.name(), model.version()), hints.pinnedNode());
      metrics.routed(route.reason());
      target = route.target();
      call.sent = pools.send(target, model.name(), model.version(), request, deadline);
    } catch (RuntimeException e) {
      call.promise.fail(e);
      return call;
    }
    long timer = vertx.setTimer(timeoutMillis, id -> {
      if (call.promise.tryFail(InferenceException.deadlineExceeded("deadline of " + timeoutMillis + " ms passed"))) {
        call.withdraw();
      }
    });
    String node = target.nodeId();
    call.sent.whenComplete((response, error) -> context.runOnContext(v -> {
      vertx.cancelTimer(timer);
      if (error != null) {
        call.promise.tryFail(error);
      } else if (response == null) {
        call.promise.tryFail(new IllegalStateException("pool on node '" + node + "' answered null"));
      } else {
        call.promise.tryComplete(withNode(response, node));
      }
    }));
    return call;
  }

  /** Where it ran is the pool's to say; if it did not, it ran where it was sent. */
  private static InferenceResponse withNode(InferenceResponse r, String node) {
    if (r.parameters().containsKey(Fields.KILN_NODE)) {
      return r;
    }
    Map<String, Object> params = new HashMap<>(r.parameters());
    params.put(Fields.KILN_NODE, node);
    return new InferenceResponse(r.id(), r.modelName(), r.modelVersion(), r.outputs(), params);
  }
}
