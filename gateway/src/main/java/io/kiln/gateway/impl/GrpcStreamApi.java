package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelStreamInferResponse;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ResponseStream;
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

  private final GatewayContext gw;
  private final StreamDispatcher streams;

  GrpcStreamApi(GatewayContext gw, StreamDispatcher streams) {
    this.gw = gw;
    this.streams = streams;
  }

  void register(GrpcServer server) {
    server.callHandler(GRPCInferenceServiceGrpcService.ModelStreamInfer, this::call);
  }

  private void call(GrpcServerRequest<ModelInferRequest, ModelStreamInferResponse> req) {
    Call call = new Call(req.response());
    req.errorHandler(err -> call.gone());
    req.exceptionHandler(err -> call.gone());
    req.response().exceptionHandler(err -> call.gone());
    req.handler(call::request);
    req.endHandler(v -> call.halfClosed());
  }

  /** One ModelStreamInfer call and its open streams. */
  private final class Call {
    private final GrpcServerResponse<ModelInferRequest, ModelStreamInferResponse> response;
    private final Set<ResponseStream> open = new HashSet<>();
    private boolean halfClosed;
    private boolean gone;
    private boolean paused;
    private boolean ended;

    Call(GrpcServerResponse<ModelInferRequest, ModelStreamInferResponse> response) {
      this.response = response;
    }

    void request(ModelInferRequest msg) {
      if (gone) {
        return;
      }
      long start = gw.metrics().start();
      String label = gw.models().label(msg.getModelName());
      One one = new One(start, label, msg.getId());
      try {
        ModelInfo model = gw.models().findReady(msg.getModelName(), msg.getModelVersion());
        DecodedRequest decoded = GrpcCodec.decode(msg, model);
        one.decoded = decoded;
        Hints hints = Hints.from(null, null, -1, decoded.header().parameters(), gw.locator());
        one.stream = streams.open(model, decoded.request(), hints, one);
        if (!one.over) {
          open.add(one.stream);
          if (paused) {
            one.stream.pause();
          }
        }
      } catch (RuntimeException e) {
        one.error(e);
      }
    }

    void halfClosed() {
      halfClosed = true;
      maybeEnd();
    }

    void gone() {
      if (!gone) {
        gone = true;
        for (ResponseStream s : Set.copyOf(open)) {
          s.cancel();
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
        open.forEach(ResponseStream::pause);
        response.drainHandler(v -> {
          paused = false;
          Set.copyOf(open).forEach(ResponseStream::resume);
        });
      }
    }

    private void maybeEnd() {
      if (halfClosed && open.isEmpty() && !gone && !ended) {
        ended = true;
        response.status(GrpcStatus.OK).end();
      }
    }

    /** One request of the call. */
    private final class One implements ChunkListener {
      private final long start;
      private final String label;
      private final String id;
      DecodedRequest decoded;
      ResponseStream stream;
      boolean over;

      One(long start, String label, String id) {
        this.start = start;
        this.label = label;
        this.id = id;
      }

      @Override
      public void chunk(InferenceResponse chunk) {
        write(ModelStreamInferResponse.newBuilder().setInferResponse(GrpcCodec.encode(chunk, decoded)).build());
      }

      @Override
      public void end(Map<String, Object> parameters) {
        done("ok", GrpcStatus.OK);
      }

      @Override
      public void error(Throwable t) {
        ErrorMapper.Failure f = gw.errors().map(t);
        write(ModelStreamInferResponse.newBuilder().setErrorMessage(f.message()
            + (id.isEmpty() ? "" : " (request '" + id + "')")).build());
        done(ErrorMapper.outcome(f.kind()), ErrorMapper.grpcStatus(f.kind()));
      }

      private void done(String outcome, GrpcStatus status) {
        if (over) {
          return;
        }
        over = true;
        gw.metrics().finish(start, label, "grpc_stream", outcome, status.name());
        if (stream != null) {
          open.remove(stream);
        }
        maybeEnd();
      }
    }
  }
}
