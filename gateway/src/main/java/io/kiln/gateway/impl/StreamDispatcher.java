package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.StreamOptions;
import io.kiln.gateway.spi.PoolDirectory;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ResponseStream;
import io.kiln.pools.ValidatedRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The protocol-neutral half of streaming: admits a stream against the node's limit, routes it like any request
 * and opens it at the chosen pool; a model that does not stream is answered through the {@link Dispatcher} as a
 * stream of one chunk. Every listener call comes on the calling context. Call {@link #open} on an event loop;
 * it never blocks.
 */
final class StreamDispatcher {

  /** The stream of a model that does not stream: one chunk, nothing to pause; its token withdraws its call. */
  private static final ResponseStream SINGLE = new ResponseStream() {
    @Override
    public String id() {
      return "single";
    }

    @Override
    public void pause() {
    }

    @Override
    public void resume() {
    }
  };

  /** A stream that never opened (no route): counted by the gateway's request meters only, not as a generation. */
  private static final String REFUSED = "refused";

  private final PoolDirectory pools;
  private final Router router;
  private final Dispatcher dispatcher;
  private final GatewayMetrics metrics;
  private final StreamMetrics streamMetrics;
  private final long defaultTimeoutMillis;
  private final LongSupplier nanoClock;
  private final Supplier<StreamOptions> options;
  private final int retryAfterSeconds;

  StreamDispatcher(PoolDirectory pools, Router router, Dispatcher dispatcher, GatewayMetrics metrics,
                   StreamMetrics streamMetrics, long defaultTimeoutMillis, LongSupplier nanoClock,
                   Supplier<StreamOptions> options, int retryAfterSeconds) {
    this.pools = pools;
    this.router = router;
    this.dispatcher = dispatcher;
    this.metrics = metrics;
    this.streamMetrics = streamMetrics;
    this.defaultTimeoutMillis = defaultTimeoutMillis;
    this.nanoClock = nanoClock;
    this.options = options;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /**
   * Opens a stream of {@code request}'s answer in its {@link RequestContext}, made here of the edge's {@code trace}
   * (null: untraced; carried to the pool as an infer request's is) and {@code cancellation} (the exchange's token,
   * the one way to withdraw the stream: its cancel also frees the stream's place under the node's limit) with the
   * stream's deadline.
   *
   * @throws CapacityExceededException when the node holds its limit of streams (503 + Retry-After)
   * @throws RuntimeException an {@link io.kiln.pools.InferenceException} when routing fails (no ready pool)
   */
  ResponseStream open(ModelInfo model, ValidatedRequest request, Hints hints, io.kiln.pools.trace.RequestTrace trace,
                      io.kiln.pools.Cancellation cancellation, ChunkListener listener) {
    StreamOptions limits = options.get();
    int now = streamMetrics.active.incrementAndGet();
    if (now > limits.maxStreams()) {
      streamMetrics.active.decrementAndGet();
      throw new CapacityExceededException("too many streams: this gateway holds " + limits.maxStreams()
          + " open (its limit)", Duration.ofSeconds(Math.max(1, retryAfterSeconds)));
    }
    Metered metered = new Metered(model, listener);
    cancellation.onCancel(metered); // a withdrawn stream's listener hears nothing more: the cancel releases its slot
    try {
      if (!model.signature().streaming()) {
        return oneChunk(model, request, hints, trace, cancellation, metered);
      }
      long timeoutMillis = hints.timeoutMillis() > 0 ? Math.min(hints.timeoutMillis(), defaultTimeoutMillis)
          : defaultTimeoutMillis;
      long deadline = nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
      List<PoolEndpoint> candidates = pools.pools(model.name(), model.version());
      Router.Route route = router.route(model.name(), candidates, hints.pinnedNode(), null,
          io.kiln.pools.PrefixAffinity.keys(request.request()));
      metrics.routed(route.reason(), false);
      return pools.stream(route.target(), model.name(), model.version(), request,
          io.kiln.pools.RequestContext.of(request.request().id(), deadline, trace,
              io.kiln.pools.RequestContext.Priority.NORMAL, cancellation),
          limits.window(), limits.maxChunkBytes(), metered);
    } catch (RuntimeException e) {
      metered.settle(REFUSED);
      throw e;
    }
  }

  private ResponseStream oneChunk(ModelInfo model, ValidatedRequest request, Hints hints,
                                  io.kiln.pools.trace.RequestTrace trace, io.kiln.pools.Cancellation cancellation,
                                  ChunkListener listener) {
    dispatcher.dispatch(model, request, hints, trace, cancellation).result().onComplete(ar -> {
      if (ar.failed()) {
        listener.error(ar.cause());
      } else {
        InferenceResponse r = ar.result();
        listener.chunk(r);
        listener.end(Map.of("kiln_node", r.parameters().getOrDefault(Fields.KILN_NODE, ""), "kiln_chunks", 1L));
      }
    });
    return SINGLE;
  }

  /**
   * Counts the stream as active until it settles or its token is cancelled (it runs as the token's listener, on the
   * cancelling thread), and times its chunks; a text generation's also as such ({@link LlmMetrics}).
   */
  private final class Metered implements ChunkListener, Runnable {
    private final String model;
    private final ChunkListener inner;
    private final long opened = nanoClock.getAsLong();
    private final LlmMetrics.Generation generation; // null: not a text generation model
    private long last;
    private boolean settled;

    Metered(ModelInfo model, ChunkListener inner) {
      this.model = model.name();
      this.inner = inner;
      this.generation = streamMetrics.llm.startIfGenerates(model.name(), model.signature(), opened);
    }

    @Override
    public void chunk(InferenceResponse chunk) {
      long t = nanoClock.getAsLong();
      streamMetrics.chunk(model, t - (last == 0 ? opened : last), last == 0);
      last = t;
      if (generation != null) {
        generation.chunk(chunk, t);
      }
      inner.chunk(chunk);
    }

    @Override
    public void end(Map<String, Object> parameters) {
      settle(null);
      inner.end(parameters);
    }

    @Override
    public void error(Throwable error) {
      settle(LlmMetrics.ERROR);
      inner.error(error);
    }

    @Override
    public void run() {
      settle(LlmMetrics.ABORT);
    }

    /** @param outcome null: ended well; {@link LlmMetrics#ERROR}, {@link LlmMetrics#ABORT}, or {@link #REFUSED} */
    synchronized void settle(String outcome) {
      if (!settled) {
        settled = true;
        streamMetrics.active.decrementAndGet();
        if (generation != null && !REFUSED.equals(outcome)) {
          generation.end(outcome, nanoClock.getAsLong());
        }
      }
    }
  }
}
