package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelReadyResponse;
import io.kiln.protocol.grpc.ServerLiveResponse;
import io.kiln.protocol.grpc.ServerMetadataResponse;
import io.kiln.protocol.grpc.ServerReadyResponse;
import io.kiln.pools.InferenceException;
import io.vertx.core.Vertx;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.MessageSizeOverflowException;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerOptions;
import io.vertx.grpc.server.GrpcServerRequest;
import io.vertx.grpc.server.GrpcServerResponse;
import java.util.function.Function;

/**
 * {@code inference.GRPCInferenceService} on a Vert.x gRPC server. Status mapping: invalid input
 * INVALID_ARGUMENT, unknown model NOT_FOUND, not ready / over capacity UNAVAILABLE (with a {@code retry-after}
 * trailer in seconds), deadline DEADLINE_EXCEEDED, message over the size limit RESOURCE_EXHAUSTED, bugs
 * INTERNAL. Handlers run on the event loop and never block.
 */
final class GrpcApi {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GrpcApi.class);

  static final String RETRY_AFTER_TRAILER = "retry-after";

  private final Vertx vertx;
  private final GatewayContext gw;

  GrpcApi(Vertx vertx, GatewayContext gw) {
    this.vertx = vertx;
    this.gw = gw;
  }

  GrpcServer server() {
    GrpcServer server = GrpcServer.server(vertx, new GrpcServerOptions().setMaxMessageSize(gw.options().maxBodyBytes()));
    server.callHandler(GRPCInferenceServiceGrpcService.ServerLive,
        req -> unary(req, m -> ServerLiveResponse.newBuilder().setLive(true).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ServerReady,
        req -> unary(req, m -> ServerReadyResponse.newBuilder()
            .setReady(gw.started().getAsBoolean() && gw.models().notReadyReason(gw.options().strictReadiness()) == null).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ServerMetadata,
        req -> unary(req, m -> ServerMetadataResponse.newBuilder()
            .setName("kiln").setVersion(gw.options().serverVersion()).addExtensions("binary_tensor_data").build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ModelReady,
        req -> unary(req, m -> ModelReadyResponse.newBuilder()
            .setReady(gw.models().find(m.getName(), m.getVersion()).loadedAndReady()).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ModelMetadata,
        req -> unary(req, m -> GrpcCodec.metadata(gw.models().find(m.getName(), m.getVersion()))));
    server.callHandler(GrpcWire.MODEL_INFER, this::infer);
    return server;
  }

  private <Q, R> void unary(GrpcServerRequest<Q, R> req, Function<Q, R> handler) {
    tooLarge(req, null);
    req.handler(msg -> {
      R reply;
      try {
        reply = handler.apply(msg);
      } catch (RuntimeException e) {
        fail(req.response(), gw.errors().map(e));
        return;
      }
      req.response().end(reply);
    });
  }

  private void infer(GrpcServerRequest<ModelInferRequest, ModelInferResponse> req) {
    long start = gw.metrics().start();
    GatewayTrace trace = GatewayTrace.start(gw.spans(), req.headers().get(GatewayTrace.TRACEPARENT),
        req.headers().get(GatewayTrace.TRACESTATE), "grpc");
    Exchange ex = new Exchange(req.response(), start, trace);
    tooLarge(req, ex);
    // A client cancel arrives as a gRPC error (RST_STREAM CANCELLED) on the request; a broken connection may
    // surface as an exception on either side. clientGone() is idempotent, so listen to all three.
    req.errorHandler(err -> ex.clientGone());
    req.exceptionHandler(err -> ex.clientGone());
    req.response().exceptionHandler(err -> ex.clientGone());
    req.handler(msg -> {
      ex.model = gw.models().label(msg.getModelName());
      ex.requestId = msg.getId();
      if (trace != null) {
        trace.model(ex.model);
      }
      ModelInfo model;
      DecodedRequest decoded;
      Hints hints;
      try {
        model = gw.models().findReady(msg.getModelName(), msg.getModelVersion());
        decoded = GrpcCodec.decode(msg, model);
        hints = Hints.from(req.headers().get(Hints.NODE_HEADER), req.headers().get(Hints.TIMEOUT_HEADER),
            req.timeout() > 0 ? req.timeout() : -1, decoded.header().parameters(), gw.locator());
      } catch (RuntimeException e) {
        ex.fail(e);
        return;
      }
      Dispatcher.Call call = gw.dispatcher().dispatch(model, decoded.request(), hints,
          trace == null ? null : trace.forPool(ex.requestId));
      ex.call = call;
      call.result().onComplete(ar -> { // one listener, no intermediate futures
        if (ar.failed()) {
          ex.fail(ar.cause());
          return;
        }
        ModelInferResponse encoded;
        try {
          encoded = GrpcCodec.encode(ar.result(), decoded);
        } catch (RuntimeException e) {
          ex.fail(e);
          return;
        }
        ex.reply(encoded);
      });
    });
  }

  /** An over-limit message gets RESOURCE_EXHAUSTED naming the limit; any other undecodable one INVALID_ARGUMENT. */
  private void tooLarge(GrpcServerRequest<?, ?> req, Exchange ex) {
    req.invalidMessageHandler(invalid -> {
      InferenceException e = invalid instanceof MessageSizeOverflowException o
          ? new InferenceException(InferenceException.Kind.TOO_LARGE, "message of " + o.messageSize()
              + " bytes exceeds the limit of " + gw.options().maxBodyBytes() + " bytes")
          : InferenceException.invalid("message could not be decoded");
      if (ex != null) {
        ex.fail(e);
      } else {
        fail(req.response(), gw.errors().map(e));
      }
    });
  }

  private static void fail(GrpcServerResponse<?, ?> response, ErrorMapper.Failure f) {
    if (f.retryable()) {
      response.trailers().set(RETRY_AFTER_TRAILER, Integer.toString(f.retryAfterSeconds()));
    }
    response.status(ErrorMapper.grpcStatus(f.kind())).statusMessage(f.message()).end();
  }

  /** One ModelInfer call: answered once, recorded once. */
  private final class Exchange {
    private final GrpcServerResponse<ModelInferRequest, ModelInferResponse> response;
    private final long start;
    private boolean done;
    String model = GatewayMetrics.UNKNOWN_MODEL;
    Dispatcher.Call call;
    private boolean clientGone;
    private final GatewayTrace trace; // null: none
    String requestId;

    Exchange(GrpcServerResponse<ModelInferRequest, ModelInferResponse> response, long start, GatewayTrace trace) {
      this.response = response;
      this.start = start;
      this.trace = trace;
      if (trace != null) {
        response.headers().set(GatewayTrace.TRACEPARENT, trace.traceparent());
      }
    }

    /** The client cancelled or the stream broke: withdraw the request, answer nothing. */
    void clientGone() {
      clientGone = true;
      if (call != null) {
        call.cancel();
      } else {
        finish("cancelled", GrpcStatus.CANCELLED);
      }
    }

    void reply(ModelInferResponse r) {
      if (finish("ok", GrpcStatus.OK)) {
        response.end(r);
      }
    }

    void fail(Throwable t) {
      if (clientGone) {
        finish("cancelled", GrpcStatus.CANCELLED);
        return;
      }
      ErrorMapper.Failure f;
      try (var log = GatewayTrace.log(requestId, trace)) { // an internal error is logged: name the request
        f = gw.errors().map(t);
      }
      if (finish(ErrorMapper.outcome(f.kind()), ErrorMapper.grpcStatus(f.kind()))) {
        GrpcApi.fail(response, f);
      }
    }

    private boolean finish(String outcome, GrpcStatus status) {
      if (done) {
        return false;
      }
      done = true;
      gw.metrics().finish(start, model, "grpc", outcome, status.name());
      if (trace != null) {
        trace.end(outcome, status.name(), status == GrpcStatus.OK);
      }
      if (LOG.isDebugEnabled()) {
        try (var log = GatewayTrace.log(requestId, trace)) {
          LOG.debug("request {} to {} over grpc: {} {} after {} ms", requestId, model, outcome, status,
              (System.nanoTime() - start) / 1_000_000);
        }
      }
      return true;
    }
  }
}
