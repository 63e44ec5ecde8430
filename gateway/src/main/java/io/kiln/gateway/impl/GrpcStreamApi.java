package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelStreamInferResponse;
import io.kiln.pools.InferenceResponse;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerRequest;
import io.vertx.grpc.server.GrpcServerResponse;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Triton's {@code ModelStreamInfer}: a bidirectional call on which every {@code ModelInferRequest} opens a
 * stream (see {@link StreamDispatcher}) whose chunks come back as {@code ModelStreamInferResponse.infer_response}
 * messages, in order per request (requests' chunks may interleave; each carries its request's id); a failure of
 * one request (bad input, unknown model, over capacity, an error mid-stream) is one message carrying
 * {@code error_message}, and the call goes on. The call ends OK once the client half-closed and every stream is
 * over. A full write queue pauses every open stream until it drains; a cancelled or broken call cancels them.
 * Handlers run on the event loop.
 */
final class GrpcStreamApi {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GrpcStreamApi.class);

  private final GatewayContext gw;
  private final StreamDispatcher streams;
  private final Answers answers = new Answers();

  GrpcStreamApi(GatewayContext gw, StreamDispatcher streams) {
    this.gw = gw;
    this.streams = streams;
  }

  void register(GrpcServer server) {
    server.callHandler(GRPCInferenceServiceGrpcService.ModelStreamInfer, this::call);
  }

  private void call(GrpcServerRequest<ModelInferRequest, ModelStreamInferResponse> req) {
    Call call = new Call(req.response(), req.headers().get(GatewayTrace.TRACEPARENT),
        req.headers().get(GatewayTrace.TRACESTATE));
    req.errorHandler(err -> call.gone());
    req.exceptionHandler(err -> call.gone());
    req.response().exceptionHandler(err -> call.gone());
    req.handler(call::request);
    req.endHandler(v -> call.halfClosed());
  }

  /** One ModelStreamInfer call and its open streams. */
  private final class Call {
    private final GrpcServerResponse<ModelInferRequest, ModelStreamInferResponse> response;
    private final Set<FrontExchange<One, Void>> open = new HashSet<>();
    private boolean halfClosed;
    private boolean gone;
    private boolean paused;
    private boolean ended;

    /** The call's trace headers: every request of the call is traced under them (each its own span). */
    private final String traceparent;
    private final String tracestate;

    Call(GrpcServerResponse<ModelInferRequest, ModelStreamInferResponse> response, String traceparent,
         String tracestate) {
      this.response = response;
      this.traceparent = traceparent;
      this.tracestate = tracestate;
    }

    void request(ModelInferRequest msg) {
      if (gone) {
        return;
      }
      One one = new One(this, msg.getId());
      GatewayTrace trace = GatewayTrace.start(gw.spans(), traceparent, tracestate, "grpc-stream");
      FrontExchange<One, Void> ex = new FrontExchange<>(gw, answers, one, gw.models().label(msg.getModelName()), trace);
      one.ex = ex;
      ex.requestId(msg.getId());
      try {
        ModelInfo model = gw.models().findReady(msg.getModelName(), msg.getModelVersion());
        DecodedRequest decoded = GrpcCodec.decode(msg, model);
        one.decoded = decoded;
        Hints hints = Hints.from(null, null, -1, decoded.header().parameters(), gw.locator());
        ex.open(streams, model, decoded.request(), hints);
        if (!ex.done()) {
          open.add(ex);
          if (paused) {
            ex.stream().pause();
          }
        }
      } catch (RuntimeException e) {
        ex.fail(e);
      }
    }

    void halfClosed() {
      halfClosed = true;
      maybeEnd();
    }

    /** The call was cancelled or broke: every open request is withdrawn and recorded as cancelled. */
    void gone() {
      if (!gone) {
        gone = true;
        for (FrontExchange<One, Void> ex : Set.copyOf(open)) {
          ex.clientGone();
        }
        open.clear();
      }
    }

    private void write(ModelStreamInferResponse m) {
      if (gone || ended) {
        return;
      }
      response.write(m);
      if (!paused && response.writeQueueFull()) {
        paused = true;
        open.forEach(ex -> ex.stream().pause());
        response.drainHandler(v -> {
          paused = false;
          Set.copyOf(open).forEach(ex -> ex.stream().resume());
        });
      }
    }

    /** One request of the call is over (answered, failed or withdrawn). */
    private void over(One one) {
      open.remove(one.ex);
      maybeEnd();
    }

    private void maybeEnd() {
      if (halfClosed && open.isEmpty() && !gone && !ended) {
        ended = true;
        response.status(GrpcStatus.OK).end();
      }
    }
  }

  /** One request of a call: where its chunks go, and what decodes them. */
  private static final class One {
    final Call call;
    final String id;
    FrontExchange<One, Void> ex;
    DecodedRequest decoded;

    One(Call call, String id) {
      this.call = call;
      this.id = id;
    }
  }

  /** Each request's chunks as {@code infer_response} messages; its failure as one {@code error_message}. */
  private final class Answers extends FrontExchange.Protocol<One, Void> {
    Answers() {
      super("grpc_stream", LOG, GrpcStatus.OK.name(), GrpcStatus.CANCELLED.name());
    }

    @Override
    String code(One one, ErrorMapper.Failure f) {
      return ErrorMapper.grpcStatus(f.kind()).name();
    }

    @Override
    void traceparent(One one, String traceparent) {
      // the call's headers are the call's, sent before any request was read: a request's own span is not echoed
    }

    @Override
    void chunk(FrontExchange<One, Void> ex, InferenceResponse chunk) {
      One one = ex.channel();
      one.call.write(ModelStreamInferResponse.newBuilder()
          .setInferResponse(GrpcCodec.encode(chunk, one.decoded)).build());
    }

    @Override
    void ended(FrontExchange<One, Void> ex, Map<String, Object> parameters) {
      ex.reply(null);
    }

    @Override
    void answer(One one, Void none) {
      one.call.over(one);
    }

    @Override
    void error(One one, ErrorMapper.Failure f) {
      one.call.write(ModelStreamInferResponse.newBuilder().setErrorMessage(f.message()
          + (one.id.isEmpty() ? "" : " (request '" + one.id + "')")).build());
      one.call.over(one);
    }
  }
}
