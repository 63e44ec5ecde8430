package io.kiln.loadtest;

import io.kiln.loadtest.impl.BareGrpcCodec;
import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.ServerStart;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerOptions;
import io.vertx.grpc.server.GrpcServerRequest;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gRPC limit baseline: a bare Vert.x gRPC server (vertx-grpc-server over cleartext HTTP/2, as Kiln's
 * gateway uses) serving only {@code inference.GRPCInferenceService/ModelInfer}, with the same per-request
 * protobuf work as Kiln's gRPC front end ({@link BareGrpcCodec}: tensors decoded into floats, shapes checked,
 * an answer of 10 floats in {@code raw_output_contents}) and nothing behind it. An invalid request gets
 * INVALID_ARGUMENT with a message. {@link #start} blocks until it listens; it runs on its own event loops
 * until {@link #close()}.
 */
public final class BareGrpcServer implements AutoCloseable {
  public static final int DEFAULT_PORT = 8091;
  /** Messages above this are refused (RESOURCE_EXHAUSTED), as the gateway refuses over-limit bodies. */
  public static final long MAX_MESSAGE_BYTES = RequestTemplate.MAX_BYTES;

  /**
   * @param port       0 picks a free port (see {@link BareGrpcServer#port()})
   * @param eventLoops server instances, one per event loop, sharing the port
   */
  public record Options(String host, int port, int eventLoops) {
    public Options {
      Objects.requireNonNull(host, "host");
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be 0..65535, got " + port);
      }
      if (eventLoops < 1 || eventLoops > 256) {
        throw new IllegalArgumentException("eventLoops must be 1..256, got " + eventLoops);
      }
    }

    /** Loopback, a free port, one event loop. */
    public static Options defaults() {
      return new Options("127.0.0.1", 0, 1);
    }

    public Options withHost(String h) {
      return new Options(h, port, eventLoops);
    }

    public Options withPort(int p) {
      return new Options(host, p, eventLoops);
    }

    public Options withEventLoops(int n) {
      return new Options(host, port, n);
    }
  }

  private final Vertx vertx;
  private final int port;
  private final AtomicInteger requests;

  private BareGrpcServer(Vertx vertx, int port, AtomicInteger requests) {
    this.vertx = vertx;
    this.port = port;
    this.requests = requests;
  }

  /**
   * Starts a server with its own Vert.x instance.
   *
   * @throws IllegalStateException if it cannot listen (port taken, bad host)
   */
  public static BareGrpcServer start(Options options) {
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(options.eventLoops()));
    AtomicInteger requests = new AtomicInteger();
    try {
      int port = ServerStart.deployShared(vertx, options.host(), options.port(), options.eventLoops(),
          (p, bound, index) -> new Instance(options.host(), p, requests, bound, index), "bare gRPC server");
      return new BareGrpcServer(vertx, port, requests);
    } catch (RuntimeException e) {
      vertx.close();
      throw e;
    }
  }

  private static final class Instance extends VerticleBase {
    private final String host;
    private final int port;
    private final AtomicInteger requests;
    private final int[] bound;
    private final int index;

    Instance(String host, int port, AtomicInteger requests, int[] bound, int index) {
      this.host = host;
      this.port = port;
      this.requests = requests;
      this.bound = bound;
      this.index = index;
    }

    @Override
    public Future<?> start() {
      GrpcServer grpc = GrpcServer.server(vertx, new GrpcServerOptions().setMaxMessageSize(MAX_MESSAGE_BYTES))
          .callHandler(GRPCInferenceServiceGrpcService.ModelInfer, this::infer);
      return vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port).setTcpNoDelay(true))
          .requestHandler(grpc)
          .listen()
          .onSuccess(s -> {
            synchronized (bound) {
              bound[index] = s.actualPort();
            }
          });
    }

    private void infer(GrpcServerRequest<ModelInferRequest, ModelInferResponse> req) {
      requests.incrementAndGet();
      req.invalidMessageHandler(invalid -> req.response()
          .status(invalid instanceof io.vertx.grpc.common.MessageSizeOverflowException
              ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INVALID_ARGUMENT)
          .statusMessage("message could not be decoded: " + invalid.getMessage()).end());
      req.handler(msg -> {
        ModelInferResponse answer;
        try {
          answer = BareGrpcCodec.answer(msg);
        } catch (IllegalArgumentException e) {
          req.response().status(GrpcStatus.INVALID_ARGUMENT).statusMessage(e.getMessage()).end();
          return;
        }
        req.response().end(answer);
      });
    }
  }

  /** The port it listens on. */
  public int port() {
    return port;
  }

  /** ModelInfer calls received so far. */
  public int requestsReceived() {
    return requests.get();
  }

  /** Stops listening and releases the event loops; waits up to 10 s. */
  @Override
  public void close() {
    try {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      // Best effort: the process is usually about to exit.
    }
  }

  /** {@code BareGrpcServer [--host 127.0.0.1] [--port 8091] [--event-loops 1]}; runs until the process is stopped. */
  public static void main(String[] argv) throws InterruptedException {
    CliArgs args = CliArgs.parse(argv, Set.of("help"));
    if (args.flag("help")) {
      System.out.println("usage: BareGrpcServer [--host 127.0.0.1] [--port " + DEFAULT_PORT + "] [--event-loops 1]\n"
          + "  serves inference.GRPCInferenceService/ModelInfer (FP32 inputs; answers 10 floats, or for\n"
          + "  model echo the first input)");
      return;
    }
    Options o;
    try {
      o = new Options(args.string("host", "127.0.0.1"), args.integer("port", DEFAULT_PORT), args.integer("event-loops", 1));
      args.rejectUnused();
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    }
    BareGrpcServer server = start(o);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "bare-grpc-server-shutdown"));
    System.out.printf("BareGrpcServer listening on %s:%d (gRPC, cleartext HTTP/2, event loops %d)%n", o.host(),
        server.port(), o.eventLoops());
    System.out.flush();
    stopped.await();
  }
}
