package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.Cancellation;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ResponseStream;
import io.kiln.pools.Tensor;
import io.kiln.pools.ValidatedRequest;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * One front-end request from arrival to answer, whatever its protocol (HTTP infer, gRPC ModelInfer, generate and
 * generate_stream, the OpenAI API's inference calls): it holds the request's start, model, trace and pool call,
 * answers it at most once, and records it exactly once (one metrics record, one debug log line, the span's end).
 * It is its request's {@link Cancellation}, the token carried in the request's context to the pool (the edge makes
 * it; being the token saves an object per request): a client that goes away (connection closed or reset, gRPC stream cancelled) cancels
 * it, which withdraws the pool call or stream wherever it is. How an answer, an error or a chunk is written is the
 * {@link Protocol}'s, one instance per server (not per request): a request costs this one object.
 *
 * <p>{@link #OFFLOAD_BYTES} is the one rule for large messages in every protocol: decoding a request, or encoding
 * an answer, of more tensor bytes than that runs on a worker thread ({@link #offload}). Used on the request's event
 * loop only.
 *
 * @param <C> where the protocol writes this request's answer (its response, or a per-request writer)
 * @param <A> the encoded answer
 */
final class FrontExchange<C, A> extends Cancellation implements ChunkListener {

  /** Requests above this many bytes are decoded, and answers above it encoded, on a worker thread. */
  static final int OFFLOAD_BYTES = 256 * 1024;

  /**
   * How one protocol writes answers; called only by the exchange, after it recorded the request. Its labels are
   * fields, read on every request without a call.
   */
  abstract static class Protocol<C, A> {
    /** The {@code protocol} label of the request meters, and the word of the log line. */
    final String label;
    /** The logger of the request line (kept per protocol: log configurations and tests name it). */
    final org.slf4j.Logger log;
    final String okCode;
    final String cancelledCode;

    Protocol(String label, org.slf4j.Logger log, String okCode, String cancelledCode) {
      this.label = label;
      this.log = log;
      this.okCode = okCode;
      this.cancelledCode = cancelledCode;
    }

    /** The {@code code} label of a failure. */
    abstract String code(C channel, ErrorMapper.Failure f);

    /** Makes the answer carry the request's traceparent. */
    abstract void traceparent(C channel, String traceparent);

    abstract void answer(C channel, A answer);

    abstract void error(C channel, ErrorMapper.Failure f);

    /** One chunk of a stream opened by {@link #open}; a protocol that opens none never hears one. */
    void chunk(FrontExchange<C, A> ex, InferenceResponse chunk) {
      throw new UnsupportedOperationException(label + " opens no streams");
    }

    /** A stream opened by {@link #open} ended well; answer with {@link #reply}. */
    void ended(FrontExchange<C, A> ex, Map<String, Object> parameters) {
      throw new UnsupportedOperationException(label + " opens no streams");
    }
  }

  private final GatewayContext gw;
  private final Protocol<C, A> protocol;
  private final C channel;
  private final long start;
  private final GatewayTrace trace; // null: none
  private String model;
  private String requestId; // the OIP id, once known
  private Dispatcher.Call call;
  private ResponseStream stream;
  private boolean done;
  private boolean clientGone;

  /** Starts the request's timer; {@code model} is its metrics label ({@link ModelLookup#label}). */
  FrontExchange(GatewayContext gw, Protocol<C, A> protocol, C channel, String model, GatewayTrace trace) {
    this.gw = gw;
    this.protocol = protocol;
    this.channel = channel;
    this.start = gw.metrics().start();
    this.trace = trace;
    this.model = model;
    if (trace != null) {
      trace.model(model);
      protocol.traceparent(channel, trace.traceparent());
    }
  }

  C channel() {
    return channel;
  }

  /** Names the model once the request says which (gRPC: with its message). */
  void model(String label) {
    model = label;
    if (trace != null) {
      trace.model(label);
    }
  }

  void requestId(String id) {
    requestId = id;
  }

  boolean done() {
    return done;
  }

  /** The stream {@link #open} opened, or null. */
  ResponseStream stream() {
    return stream;
  }

  /**
   * Flow control for a stream written to one HTTP response: while {@code out}'s write queue is full the stream is
   * paused (its worker stops after its credit window) and resumed when the queue drains.
   */
  void pauseWhileFull(io.vertx.core.streams.WriteStream<?> out) {
    ResponseStream s = stream;
    if (s != null && out.writeQueueFull()) {
      s.pause();
      out.drainHandler(v -> s.resume());
    }
  }

  /** Sends the request to a pool; the one place the exchange calls the dispatcher. */
  Future<InferenceResponse> dispatch(ModelInfo model, ValidatedRequest request, Hints hints) {
    if (clientGone) {
      return Future.failedFuture(InferenceException.unavailable("client went away"));
    }
    requestId = request.request().id();
    Dispatcher.Call c = gw.dispatcher().dispatch(model, request, hints, trace == null ? null : trace.forPool(requestId),
        this);
    call = c;
    return c.result();
  }

  /** Opens the request's stream; its chunks go to the protocol. */
  void open(StreamDispatcher streams, ModelInfo model, ValidatedRequest request, Hints hints) {
    requestId = request.request().id();
    stream = streams.open(model, request, hints, trace == null ? null : trace.forPool(requestId), this, this);
  }

  /** The client closed, reset or cancelled before the answer: withdraw the request, answer nothing. */
  void clientGone() {
    clientGone = true;
    if (done) {
      return;
    }
    cancel("client went away"); // the token: the pool call or stream withdraws, wherever it is
    if (call != null) {
      call.cancel(); // its failure arrives and finishes the request as cancelled
      return;
    }
    finish("cancelled", protocol.cancelledCode); // a withdrawn stream's listener hears nothing more
  }

  void reply(A answer) {
    if (finish("ok", protocol.okCode)) {
      protocol.answer(channel, answer);
    }
  }

  void fail(Throwable t) {
    if (clientGone) {
      finish("cancelled", protocol.cancelledCode);
      return;
    }
    if (done) {
      return;
    }
    ErrorMapper.Failure f;
    try (var log = GatewayTrace.log(requestId, trace)) { // an internal error is logged: name the request
      f = gw.errors().map(t);
    }
    if (finish(ErrorMapper.outcome(f.kind()), protocol.code(channel, f))) {
      protocol.error(channel, f);
    }
  }

  @Override
  public void chunk(InferenceResponse chunk) {
    if (!done) {
      protocol.chunk(this, chunk);
    }
  }

  @Override
  public void end(Map<String, Object> parameters) {
    if (!done) {
      protocol.ended(this, parameters);
    }
  }

  @Override
  public void error(Throwable error) {
    fail(error);
  }

  private boolean finish(String outcome, String code) {
    if (done) {
      return false;
    }
    done = true;
    gw.metrics().finish(start, model, protocol.label, outcome, code);
    if (trace != null) {
      trace.end(outcome, code, outcome.equals("ok"));
    }
    org.slf4j.Logger log = protocol.log;
    if (log.isDebugEnabled()) {
      try (var scope = GatewayTrace.log(requestId, trace)) {
        log.debug("request {} to {} over {}: {} {} after {} ms", requestId, model, protocol.label, outcome, code,
            (System.nanoTime() - start) / 1_000_000);
      }
    }
    return true;
  }

  /** Whether a message of {@code bytes} is decoded or encoded on a worker thread: the one rule of every protocol. */
  static boolean offloads(long bytes) {
    return bytes > OFFLOAD_BYTES;
  }

  /**
   * Runs {@code work} on a worker thread when {@link #offloads} says so (counted in
   * {@code kiln_gateway_offloaded_total{protocol}}), else here and now.
   */
  static <T> Future<T> offload(Vertx vertx, GatewayMetrics metrics, String protocol, long bytes, Callable<T> work) {
    if (offloads(bytes)) {
      metrics.offloaded(protocol);
      return vertx.executeBlocking(work, false);
    }
    try {
      return Future.succeededFuture(work.call());
    } catch (Exception e) {
      return Future.failedFuture(e);
    }
  }

  /** The tensor bytes of an answer: what decides whether encoding it is offloaded. */
  static long outputBytes(InferenceResponse r) {
    long n = 0;
    for (Tensor t : r.outputs()) {
      n += t.data().length;
    }
    return n;
  }
}
