package io.kiln.loadtest;

import io.kiln.loadtest.impl.BareOipCodec;
import io.kiln.loadtest.impl.BareOipHandler;
import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.ServerStart;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The HTTP limit baseline: a bare Vert.x server. With {@link Work#FIXED} (the default) it answers every
 * request, on any path and method, with the same status-200 body, optionally after a fixed delay (a timer,
 * never a blocked thread). With {@link Work#OIP} it does per POST what Kiln's HTTP front end does: parses the
 * body as an OIP v2 inference request (JSON, or the binary tensor extension) into FP32 tensors, checks shapes
 * against data, and encodes an OIP answer ({@link BareOipCodec}); a malformed request gets 400 with a message.
 * Its throughput is what no Kiln endpoint on the same machine can exceed. {@link #start} blocks until the
 * server listens; the server runs on its own event loops until {@link #close()}.
 */
public final class BareServer implements AutoCloseable {
  public static final String DEFAULT_BODY =
      "{\"model_name\":\"bare\",\"outputs\":[{\"name\":\"output\",\"datatype\":\"FP32\",\"shape\":[1,1],\"data\":[0.0]}]}";
  public static final int DEFAULT_PORT = 8090;
  /** Bodies above this get 413 in {@link Work#OIP} mode. */
  public static final long MAX_BODY_BYTES = RequestTemplate.MAX_BYTES;

  /** What the server does per request. */
  public enum Work {
    /** Answer the fixed body without reading the request: the bare HTTP limit. */
    FIXED,
    /**
     * Decode each POST as an OIP v2 inference request and encode an answer of 10 floats (the first input's
     * first values), or for model {@code echo} the first input whole ({@link BareOipCodec#ECHO}); GET and other
     * methods get {@code {}}. The limit for the same HTTP work Kiln does.
     */
    OIP;

    /** @throws IllegalArgumentException naming the choices */
    public static Work parse(String s) {
      return switch (s) {
        case "fixed" -> FIXED;
        case "oip" -> OIP;
        default -> throw new IllegalArgumentException("--work: expected fixed or oip, got '" + s + "'");
      };
    }
  }

  /**
   * @param port       0 picks a free port (see {@link BareServer#port()})
   * @param eventLoops server instances, one per event loop, sharing the port
   * @param delayMs    answer each request this long after it was fully received; 0 answers at once
   * @param work       {@link Work#FIXED} answers {@code body}; {@link Work#OIP} decodes and encodes OIP requests
   */
  public record Options(String host, int port, byte[] body, String contentType, int eventLoops, long delayMs,
                        Work work) {
    public Options {
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(work, "work");
      Objects.requireNonNull(body, "body");
      Objects.requireNonNull(contentType, "contentType");
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be 0..65535, got " + port);
      }
      if (eventLoops < 1 || eventLoops > 256) {
        throw new IllegalArgumentException("eventLoops must be 1..256, got " + eventLoops);
      }
      if (delayMs < 0) {
        throw new IllegalArgumentException("delayMs must be >= 0, got " + delayMs);
      }
      body = body.clone();
    }

    /** Loopback, a free port, the default body, one event loop, no delay. */
    public static Options defaults() {
      return new Options("127.0.0.1", 0, DEFAULT_BODY.getBytes(StandardCharsets.UTF_8), "application/json", 1, 0,
          Work.FIXED);
    }

    public Options withPort(int p) {
      return new Options(host, p, body, contentType, eventLoops, delayMs, work);
    }

    public Options withHost(String h) {
      return new Options(h, port, body, contentType, eventLoops, delayMs, work);
    }

    public Options withBody(byte[] b, String type) {
      return new Options(host, port, b, type, eventLoops, delayMs, work);
    }

    public Options withEventLoops(int n) {
      return new Options(host, port, body, contentType, n, delayMs, work);
    }

    public Options withDelayMs(long d) {
      return new Options(host, port, body, contentType, eventLoops, d, work);
    }

    public Options withWork(Work w) {
      return new Options(host, port, body, contentType, eventLoops, delayMs, w);
    }
  }

  private final Vertx vertx;
  private final int port;
  private final AtomicInteger requests;

  private BareServer(Vertx vertx, int port, AtomicInteger requests) {
    this.vertx = vertx;
    this.port = port;
    this.requests = requests;
  }

  /**
   * Starts a server with its own Vert.x instance.
   *
   * @throws IllegalStateException if it cannot listen (port taken, bad host)
   */
  public static BareServer start(Options options) {
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(options.eventLoops()));
    AtomicInteger requests = new AtomicInteger();
    Buffer body = Buffer.buffer(options.body());
    try {
      int port = ServerStart.deployShared(vertx, options.host(), options.port(), options.eventLoops(),
          (p, bound, index) -> new Instance(options, p, body, requests, bound, index), "bare server");
      return new BareServer(vertx, port, requests);
    } catch (RuntimeException e) {
      vertx.close();
      throw e;
    }
  }

  private static final class Instance extends VerticleBase {
    private final Options options;
    private final int port;
    private final Buffer body;
    private final AtomicInteger requests;
    private final int[] bound;
    private final int index;
    private BareOipHandler oip;

    Instance(Options options, int port, Buffer body, AtomicInteger requests, int[] bound, int index) {
      this.options = options;
      this.port = port;
      this.body = body;
      this.requests = requests;
      this.bound = bound;
      this.index = index;
    }

    @Override
    public Future<?> start() {
      if (options.work() == Work.OIP) {
        oip = new BareOipHandler(vertx, options.delayMs(), MAX_BODY_BYTES);
      }
      return vertx.createHttpServer(new HttpServerOptions().setHost(options.host()).setPort(port).setTcpNoDelay(true))
          .requestHandler(this::handle)
          .listen()
          .onSuccess(s -> {
            synchronized (bound) {
              bound[index] = s.actualPort();
            }
          });
    }

    private void handle(HttpServerRequest req) {
      requests.incrementAndGet();
      if (oip != null) {
        oip.handle(req);
        return;
      }
      req.end().onSuccess(v -> {
        if (options.delayMs() == 0) {
          respond(req);
        } else {
          vertx.setTimer(options.delayMs(), id -> respond(req));
        }
      });
    }

    private void respond(HttpServerRequest req) {
      req.response().putHeader("content-type", options.contentType()).end(body);
    }
  }

  /** The port it listens on. */
  public int port() {
    return port;
  }

  /** Requests received so far (counted on arrival). */
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

  /**
   * {@code BareServer [--host 127.0.0.1] [--port 8090] [--event-loops 1] [--delay-ms 0] [--work fixed|oip]
   * [--body TEXT | --body-file FILE] [--content-type application/json]}; runs until the process is stopped.
   */
  public static void main(String[] argv) throws IOException, InterruptedException {
    CliArgs args = CliArgs.parse(argv, java.util.Set.of("help"));
    if (args.flag("help")) {
      System.out.println("usage: BareServer [--host 127.0.0.1] [--port " + DEFAULT_PORT + "] [--event-loops 1] "
          + "[--delay-ms 0] [--work fixed|oip] [--body TEXT | --body-file FILE] [--content-type application/json]\n"
          + "  --work fixed  answer every request with the fixed body (default)\n"
          + "  --work oip    decode each POST as an OIP v2 inference request (JSON or binary tensors), answer 10 floats\n"
          + "                (for model echo: the first input, as builtin:identity answers)");
      return;
    }
    Options o = Options.defaults().withHost(args.string("host", "127.0.0.1")).withPort(args.integer("port", DEFAULT_PORT))
        .withEventLoops(args.integer("event-loops", 1)).withDelayMs(args.integer("delay-ms", 0))
        .withWork(Work.parse(args.string("work", "fixed")));
    String type = args.string("content-type", "application/json");
    if (args.has("body-file")) {
      Path file = Path.of(args.string("body-file", null));
      if (Files.size(file) > RequestTemplate.MAX_BYTES) {
        throw new IllegalArgumentException(file + " is larger than " + RequestTemplate.MAX_BYTES + " bytes");
      }
      o = o.withBody(Files.readAllBytes(file), type);
    } else {
      o = o.withBody(args.string("body", DEFAULT_BODY).getBytes(StandardCharsets.UTF_8), type);
    }
    args.rejectUnused();
    BareServer server = start(o);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "bare-server-shutdown"));
    System.out.printf("BareServer listening on http://%s:%d (event loops %d, delay %d ms, work %s)%n", o.host(),
        server.port(), o.eventLoops(), o.delayMs(), o.work().name().toLowerCase(java.util.Locale.ROOT));
    System.out.flush();
    stopped.await();
  }
}
