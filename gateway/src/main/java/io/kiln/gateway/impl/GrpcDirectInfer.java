package io.kiln.gateway.impl;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.pools.InferenceException;
import io.vertx.core.Handler;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerRequest;
import io.vertx.grpc.server.Service;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The gateway's gRPC server: Vert.x's, with plain {@code ModelInfer} calls (HTTP/2, {@code application/grpc} or
 * {@code application/grpc+proto}, no {@code grpc-encoding} other than identity) served on the HTTP/2 request
 * itself. Every other call, compressed, gRPC-Web and JSON ones included, goes to Vert.x's server unchanged.
 *
 * <p>Why: for MB-sized tensors (issue #36) Vert.x 5.0.7's framing copies the bytes more often than the call needs.
 * A request's body accumulates in a buffer that grows by doubling (each growth a copy), is sliced into the message,
 * and the decoder takes its bytes as a fresh array; an answer is copied once more behind the 5-byte message prefix.
 * Here the body's chunks are copied into an array that grows to the message's declared size (from 1 MiB, by 4x, so
 * a declared size is never held before its bytes come), which the parser then aliases ({@link GrpcWire#parse}); the
 * answer is written as one composite buffer (prefix, small fields, the tensors' own arrays: {@link GrpcWire#frame}).
 * What follows is the same as Vert.x's path: {@link GrpcApi#infer}, the same statuses, messages, {@code retry-after}
 * trailer and cancellation.
 *
 * <p>Runs on the request's event loop and never blocks. A message over the server's limit is refused with
 * RESOURCE_EXHAUSTED as soon as its prefix arrives, before its bytes are held; a second message in the call, a
 * compressed message, or a call that ends before its message is complete is INVALID_ARGUMENT.
 */
final class GrpcDirectInfer implements GrpcServer {

  private static final String PATH = "/" + GRPCInferenceServiceGrpcService.ModelInfer.fullMethodName();
  private static final String CONTENT_TYPE = "application/grpc";
  private static final String GRPC_STATUS = "grpc-status";
  /** GrpcApi's: one request log for gRPC, whichever server read the call. */
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GrpcApi.class);
  /** The gRPC spec's {@code grpc-timeout}: at most 8 digits and a unit (as Vert.x's server reads it). */
  private static final Pattern TIMEOUT = Pattern.compile("([0-9]{1,8})([HMSmun])");
  /** What a message's array starts at before its bytes arrive. */
  private static final int FIRST_BYTES = 1 << 20;

  private final GrpcServer vertxServer;
  private final GrpcApi api;
  private final GatewayContext gw;
  private final Answers answers = new Answers();

  GrpcDirectInfer(GrpcServer vertxServer, GrpcApi api, GatewayContext gw) {
    this.vertxServer = vertxServer;
    this.api = api;
    this.gw = gw;
  }

  @Override
  public void handle(HttpServerRequest req) {
    if (plainModelInfer(req)) {
      serve(req);
    } else {
      vertxServer.handle(req);
    }
  }

  static boolean plainModelInfer(HttpServerRequest req) {
    if (req.version() != HttpVersion.HTTP_2 || !PATH.equals(req.path())) {
      return false;
    }
    String type = req.getHeader("content-type");
    String encoding = req.getHeader("grpc-encoding");
    return (CONTENT_TYPE.equals(type) || "application/grpc+proto".equals(type))
        && (encoding == null || encoding.equals("identity"));
  }

  private void serve(HttpServerRequest req) {
    MultiMap headers = req.headers();
    GatewayTrace trace = GatewayTrace.start(gw.spans(), headers.get(GatewayTrace.TRACEPARENT),
        headers.get(GatewayTrace.TRACESTATE), "grpc");
    HttpServerResponse response = req.response();
    FrontExchange<HttpServerResponse, ModelInferResponse> ex =
        new FrontExchange<>(gw, answers, response, GatewayMetrics.UNKNOWN_MODEL, trace);
    // A client's cancel is a reset of the stream, seen on the request and the response; a lost connection closes
    // the response. clientGone() is idempotent and does nothing once the call was answered.
    req.exceptionHandler(err -> ex.clientGone());
    response.exceptionHandler(err -> ex.clientGone());
    response.closeHandler(v -> ex.clientGone());
    long timeoutMillis = timeoutMillis(headers.get("grpc-timeout"));
    MessageReader reader = new MessageReader(ex, message -> {
      ModelInferRequest msg;
      try {
        msg = GrpcWire.parse(message);
      } catch (java.io.IOException e) {
        ex.fail(InferenceException.invalid(GrpcApi.UNDECODABLE));
        return;
      }
      try {
        api.infer(ex, msg, headers, timeoutMillis);
      } catch (RuntimeException e) { // a bug: answered INTERNAL, as Vert.x's server answers a failing handler
        ex.fail(e);
      }
    });
    req.handler(reader);
    req.endHandler(v -> reader.ended());
  }

  /** The call's {@code grpc-timeout} in milliseconds; 0 when there is none or it is malformed (as Vert.x's). */
  static long timeoutMillis(String header) {
    if (header == null) {
      return 0L;
    }
    Matcher m = TIMEOUT.matcher(header);
    if (!m.matches()) {
      return 0L;
    }
    long value = Long.parseLong(m.group(1));
    TimeUnit unit = switch (m.group(2)) {
      case "H" -> TimeUnit.HOURS;
      case "M" -> TimeUnit.MINUTES;
      case "S" -> TimeUnit.SECONDS;
      case "m" -> TimeUnit.MILLISECONDS;
      case "u" -> TimeUnit.MICROSECONDS;
      default -> TimeUnit.NANOSECONDS;
    };
    return unit.toMillis(value);
  }

  /** Gathers the call's one length-prefixed message into an array of its declared size. */
  private final class MessageReader implements Handler<Buffer> {
    private final FrontExchange<?, ?> ex;
    private final java.util.function.Consumer<byte[]> onMessage;
    private final byte[] prefix = new byte[5];
    private int prefixRead;
    private byte[] message;
    /** The message's declared size; {@code message} grows towards it as its bytes arrive. */
    private int size;
    private int read;
    private boolean delivered;
    private boolean refused;

    MessageReader(FrontExchange<?, ?> ex, java.util.function.Consumer<byte[]> onMessage) {
      this.ex = ex;
      this.onMessage = onMessage;
    }

    @Override
    public void handle(Buffer chunk) {
      int pos = 0;
      int len = chunk.length();
      while (pos < len && !refused) {
        if (delivered) {
          refuse(InferenceException.invalid("a ModelInfer call carries one message, this one more"));
          return;
        }
        if (message == null) {
          int n = Math.min(prefix.length - prefixRead, len - pos);
          chunk.getBytes(pos, pos + n, prefix, prefixRead);
          pos += n;
          prefixRead += n;
          if (prefixRead < prefix.length || !start()) {
            return;
          }
        }
        int n = Math.min(size - read, len - pos);
        if (read + n > message.length) {
          grow(read + n);
        }
        chunk.getBytes(pos, pos + n, message, read);
        pos += n;
        read += n;
        deliverIfComplete();
      }
    }

    /** Reads the prefix; false when the message is refused. */
    private boolean start() {
      if (prefix[0] != 0) {
        refuse(InferenceException.invalid(GrpcApi.UNDECODABLE + ": compressed, but the call has no grpc-encoding"));
        return false;
      }
      long size = ((prefix[1] & 0xffL) << 24) | ((prefix[2] & 0xffL) << 16) | ((prefix[3] & 0xffL) << 8)
          | (prefix[4] & 0xffL);
      if (size > gw.options().grpcMaxMessageBytes()) {
        refuse(api.tooLarge(size));
        return false;
      }
      this.size = (int) size;
      // Held as the bytes arrive, not as declared: a client that declares 64 MiB and stalls holds at most
      // FIRST_BYTES (or 4x what it sent) of the server's memory. A 1.5 MB input is copied once more, partly.
      message = new byte[Math.min(this.size, FIRST_BYTES)];
      deliverIfComplete(); // an empty message is complete at once
      return true;
    }

    private void grow(int needed) {
      int capacity = (int) Math.min(size, Math.max(needed, 4L * message.length));
      message = java.util.Arrays.copyOf(message, capacity);
    }

    private void deliverIfComplete() {
      if (!delivered && read == size) {
        delivered = true;
        onMessage.accept(message);
        message = new byte[0]; // the parsed message holds the array now; this reader no longer needs it
      }
    }

    void ended() {
      if (!delivered && !refused) {
        refuse(InferenceException.invalid(GrpcApi.UNDECODABLE + ": the call ended before its message was complete"));
      }
    }

    /** Answers with {@code e}, withdrawing the call a message already made; the rest of the body is dropped. */
    private void refuse(InferenceException e) {
      refused = true;
      message = null;
      ex.fail(e);
      if (delivered) {
        ex.cancel(e.getMessage());
      }
    }
  }

  /** Writes ModelInfer's answer and errors straight on the HTTP/2 response, as Vert.x's gRPC server would. */
  private static final class Answers extends FrontExchange.Protocol<HttpServerResponse, ModelInferResponse> {
    Answers() {
      super("grpc", LOG, GrpcStatus.OK.name(), GrpcStatus.CANCELLED.name());
    }

    @Override
    String code(HttpServerResponse response, ErrorMapper.Failure f) {
      return ErrorMapper.grpcStatus(f.kind()).name();
    }

    @Override
    void traceparent(HttpServerResponse response, String traceparent) {
      response.headers().set(GatewayTrace.TRACEPARENT, traceparent);
    }

    @Override
    void answer(HttpServerResponse response, ModelInferResponse answer) {
      if (response.closed() || response.ended()) {
        return;
      }
      head(response);
      response.write(GrpcWire.frame(answer));
      response.trailers().set(GRPC_STATUS, "0");
      response.end();
    }

    @Override
    void error(HttpServerResponse response, ErrorMapper.Failure f) {
      if (response.closed() || response.ended()) {
        return;
      }
      // Trailers-Only: nothing was sent yet, so the status travels in the headers.
      head(response);
      MultiMap h = response.headers();
      h.set(GRPC_STATUS, Integer.toString(ErrorMapper.grpcStatus(f.kind()).code));
      h.set("grpc-message", io.vertx.grpc.common.impl.Utils.utf8PercentEncode(f.message()));
      if (f.retryable()) {
        h.set(GrpcApi.RETRY_AFTER_TRAILER, Integer.toString(f.retryAfterSeconds()));
      }
      response.end();
    }

    private static void head(HttpServerResponse response) {
      MultiMap h = response.headers();
      h.set("content-type", CONTENT_TYPE);
      h.set("grpc-encoding", "identity");
      h.set("grpc-accept-encoding", "gzip");
    }
  }

  @Override
  public GrpcServer callHandler(Handler<GrpcServerRequest<Buffer, Buffer>> handler) {
    vertxServer.callHandler(handler);
    return this;
  }

  @Override
  public <Req, Resp> GrpcServer callHandler(ServiceMethod<Req, Resp> serviceMethod,
                                            Handler<GrpcServerRequest<Req, Resp>> handler) {
    vertxServer.callHandler(serviceMethod, handler);
    return this;
  }

  @Override
  public GrpcServer addService(Service service) {
    vertxServer.addService(service);
    return this;
  }

  @Override
  public List<Service> services() {
    return vertxServer.services();
  }
}
