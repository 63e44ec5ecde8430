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
import io.kiln.pools.InferenceResponse;
import io.vertx.core.MultiMap;
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
  private final Answers answers = new Answers();

  GrpcApi(Vertx vertx, GatewayContext gw) {
    this.vertx = vertx;
    this.gw = gw;
  }

  /** The service's gRPC server: Vert.x's, with plain ModelInfer calls served by {@link GrpcDirectInfer}. */
  GrpcServer server() {
    GrpcServer server = GrpcServer.server(vertx, new GrpcServerOptions().setMaxMessageSize(gw.options().grpcMaxMessageBytes()));
    server.callHandler(GRPCInferenceServiceGrpcService.ServerLive,
        req -> unary(req, m -> ServerLiveResponse.newBuilder().setLive(true).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ServerReady,
        req -> unary(req, m -> ServerReadyResponse.newBuilder()
            .setReady(gw.started().getAsBoolean() && gw.models().notReadyReason(gw.options().strictReadiness()) == null).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ServerMetadata,
        req -> unary(req, m -> ServerMetadataResponse.newBuilder()
            .setName("kiln").setVersion(gw.options().serverVersion()).addExtensions("binary_tensor_data")
            .addExtensions(SharedMemoryApi.EXTENSION).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ModelReady,
        req -> unary(req, m -> ModelReadyResponse.newBuilder()
            .setReady(gw.models().find(m.getName(), m.getVersion()).loadedAndReady()).build()));
    server.callHandler(GRPCInferenceServiceGrpcService.ModelMetadata,
        req -> unary(req, m -> GrpcCodec.metadata(gw.models().find(m.getName(), m.getVersion()))));
    server.callHandler(GrpcWire.MODEL_INFER, this::infer);
    // Plain gRPC ModelInfer calls skip Vert.x's message framing and its copies of the tensors (GrpcDirectInfer);
    // compressed, gRPC-Web and JSON ones, and every other method, are Vert.x's.
    return new GrpcDirectInfer(server, this, gw);
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
    GatewayTrace trace = GatewayTrace.start(gw.spans(), req.headers().get(GatewayTrace.TRACEPARENT),
        req.headers().get(GatewayTrace.TRACESTATE), "grpc");
    FrontExchange<GrpcServerResponse<ModelInferRequest, ModelInferResponse>, ModelInferResponse> ex =
        new FrontExchange<>(gw, answers, req.response(), GatewayMetrics.UNKNOWN_MODEL, trace);
    tooLarge(req, ex);
    // A client cancel arrives as a gRPC error (RST_STREAM CANCELLED) on the request; a broken connection may
    // surface as an exception on either side. clientGone() is idempotent, so listen to all three.
    req.errorHandler(err -> ex.clientGone());
    req.exceptionHandler(err -> ex.clientGone());
    req.response().exceptionHandler(err -> ex.clientGone());
    req.handler(msg -> infer(ex, msg, req.headers(), req.timeout()));
  }

  /**
   * Serves one ModelInfer message, whichever server read it ({@link GrpcDirectInfer} or Vert.x's gRPC server).
   *
   * @param timeoutMillis the call's {@code grpc-timeout}, 0 or less for none
   */
  <C> void infer(FrontExchange<C, ModelInferResponse> ex, ModelInferRequest msg, MultiMap headers, long timeoutMillis) {
    ex.model(gw.models().label(msg.getModelName()));
    ex.requestId(msg.getId());
    ModelInfo model;
    try {
      model = gw.models().findReady(msg.getModelName(), msg.getModelVersion());
    } catch (RuntimeException e) {
      ex.fail(e);
      return;
    }
    // A small message (the common case) is decoded here and now, with no intermediate futures.
    long bytes = msg.getSerializedSize();
    if (!FrontExchange.offloads(bytes) && SharedMemoryTensors.mayReference(msg)) {
      bytes = FrontExchange.OFFLOAD_BYTES + 1L; // inputs copied out of shared memory: as large a job
    }
    if (!FrontExchange.offloads(bytes)) {
      DecodedRequest decoded;
      try {
        decoded = GrpcCodec.decode(msg, model, gw.sharedMemory());
      } catch (RuntimeException e) {
        ex.fail(e);
        return;
      }
      serve(ex, headers, timeoutMillis, model, decoded);
      return;
    }
    FrontExchange.offload(vertx, gw.metrics(), "grpc", bytes, () -> GrpcCodec.decode(msg, model, gw.sharedMemory()))
        .onComplete(ar -> {
          if (ar.failed()) {
            ex.fail(ar.cause());
          } else {
            serve(ex, headers, timeoutMillis, model, ar.result());
          }
        });
  }

  private void serve(FrontExchange<?, ModelInferResponse> ex, MultiMap headers, long timeoutMillis, ModelInfo model,
                     DecodedRequest decoded) {
    Hints hints;
    try {
      hints = Hints.from(headers.get(Hints.NODE_HEADER), headers.get(Hints.TIMEOUT_HEADER),
          timeoutMillis > 0 ? timeoutMillis : -1, decoded.header().parameters(), gw.locator());
    } catch (RuntimeException e) {
      ex.fail(e);
      return;
    }
    ex.dispatch(model, decoded.request(), hints).onComplete(ar -> { // one listener, no intermediate futures
      if (ar.failed()) {
        ex.fail(ar.cause());
        return;
      }
      InferenceResponse response = ar.result();
      long bytes = FrontExchange.outputBytes(response);
      if (FrontExchange.offloads(bytes)) {
        FrontExchange.offload(vertx, gw.metrics(), "grpc", bytes, () -> GrpcCodec.encode(response, decoded, gw.sharedMemory()))
            .onSuccess(ex::reply).onFailure(ex::fail);
        return;
      }
      ModelInferResponse encoded;
      try {
        encoded = GrpcCodec.encode(response, decoded, gw.sharedMemory());
      } catch (RuntimeException e) {
        ex.fail(e);
        return;
      }
      ex.reply(encoded);
    });
  }

  /** An over-limit message gets RESOURCE_EXHAUSTED naming the limit; any other undecodable one INVALID_ARGUMENT. */
  private void tooLarge(GrpcServerRequest<?, ?> req, FrontExchange<?, ?> ex) {
    req.invalidMessageHandler(invalid -> {
      InferenceException e = invalid instanceof MessageSizeOverflowException o
          ? tooLarge(o.messageSize())
          : InferenceException.invalid(UNDECODABLE);
      if (ex != null) {
        ex.fail(e);
      } else {
        fail(req.response(), gw.errors().map(e));
      }
    });
  }

  static final String UNDECODABLE = "message could not be decoded";

  InferenceException tooLarge(long messageSize) {
    return new InferenceException(InferenceException.Kind.TOO_LARGE, "message of " + messageSize
        + " bytes exceeds the limit of " + gw.options().grpcMaxMessageBytes() + " bytes");
  }

  private static void fail(GrpcServerResponse<?, ?> response, ErrorMapper.Failure f) {
    if (f.retryable()) {
      response.trailers().set(RETRY_AFTER_TRAILER, Integer.toString(f.retryAfterSeconds()));
    }
    response.status(ErrorMapper.grpcStatus(f.kind())).statusMessage(f.message()).end();
  }

  /** How a ModelInfer call is answered: its message and OK, or a status with its message and trailers. */
  private static final class Answers
      extends FrontExchange.Protocol<GrpcServerResponse<ModelInferRequest, ModelInferResponse>, ModelInferResponse> {
    Answers() {
      super("grpc", LOG, GrpcStatus.OK.name(), GrpcStatus.CANCELLED.name());
    }

    @Override
    String code(GrpcServerResponse<ModelInferRequest, ModelInferResponse> response, ErrorMapper.Failure f) {
      return ErrorMapper.grpcStatus(f.kind()).name();
    }

    @Override
    void traceparent(GrpcServerResponse<ModelInferRequest, ModelInferResponse> response, String traceparent) {
      response.headers().set(GatewayTrace.TRACEPARENT, traceparent);
    }

    @Override
    void answer(GrpcServerResponse<ModelInferRequest, ModelInferResponse> response, ModelInferResponse r) {
      response.end(r);
    }

    @Override
    void error(GrpcServerResponse<ModelInferRequest, ModelInferResponse> response, ErrorMapper.Failure f) {
      GrpcApi.fail(response, f);
    }
  }
}
