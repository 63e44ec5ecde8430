package io.kiln.gateway.impl;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.spi.DataLocator;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.gateway.spi.PoolDirectory;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * Wires the gateway's parts and owns its two servers (HTTP/REST and gRPC, separate ports). Start and close
 * are asynchronous and safe from any thread.
 */
public final class GatewayServers {

  /**
   * The HTTP/2 flow-control window the gRPC port grants each call (stream). Vert.x's default is 64 KiB, per call and
   * per connection, returned half at a time: a client sending a 1.5 MB tensor stops ~45 times to wait for a
   * WINDOW_UPDATE from the event loop, each a wake-up that competes with the model's threads for the cores (issue
   * #36). grpc-java opens 1 MiB; grpc-go and gRPC's C core grow theirs to the bandwidth-delay product. The gateway
   * takes a call's message as it arrives and never pauses a call, so a larger window lets a client hold no more of
   * the server's memory than the message limit already does.
   */
  static final int GRPC_STREAM_WINDOW = 4 << 20;
  /** The gRPC port's window per connection: several calls' worth of {@link #GRPC_STREAM_WINDOW}. */
  static final int GRPC_CONNECTION_WINDOW = 16 << 20;

  private final GatewayOptions options;
  private final ModelDirectory models;
  private final PoolDirectory pools;
  private final DataLocator locator;
  private final LongSupplier nanoClock;
  private final PrometheusMeterRegistry registry;
  private final boolean ownRegistry;
  private final ReadinessHolds holds = new ReadinessHolds();

  private final java.util.List<java.util.function.Consumer<io.vertx.ext.web.Router>> extraRoutes =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  private final java.util.List<java.util.function.Consumer<io.vertx.grpc.server.GrpcServer>> extraGrpc =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  private volatile String extraHttp;
  private Vertx owner;
  private volatile boolean started;
  private volatile boolean closed;
  private GatewayMetrics metrics;
  private HttpServer http;
  private HttpServer grpc;
  private volatile ReadDeadlines deadlines;
  private TlsReloader tls;
  private SharedMemoryRegions sharedMemory;
  // Replaced whole, read per stream: a change applies to the next stream opened.
  private io.kiln.pools.trace.Spans spans = io.kiln.pools.trace.Spans.OFF; // guarded by this until start
  private volatile io.kiln.gateway.StreamOptions streamOptions = io.kiln.gateway.StreamOptions.DEFAULTS;

  public GatewayServers(GatewayOptions options, ModelDirectory models, PoolDirectory pools, DataLocator locator,
                        LongSupplier nanoClock) {
    this.options = options;
    this.models = models;
    this.pools = pools;
    this.locator = locator;
    this.nanoClock = nanoClock;
    this.ownRegistry = options.registry() == null;
    this.registry = ownRegistry ? new PrometheusMeterRegistry(PrometheusConfig.DEFAULT) : options.registry();
  }

  /** Adds routes (e.g. the management API) to the HTTP server; only before {@link #start}. */
  public synchronized void addRoutes(java.util.function.Consumer<io.vertx.ext.web.Router> routes) {
    if (metrics != null) {
      throw new IllegalStateException("routes must be added before the gateway starts");
    }
    extraRoutes.add(routes);
  }

  /** Adds calls (e.g. the repository extension's) to the gRPC server; only before {@link #start}. */
  public synchronized void addGrpcServices(java.util.function.Consumer<io.vertx.grpc.server.GrpcServer> services) {
    if (metrics != null) {
      throw new IllegalStateException("gRPC services must be added before the gateway starts");
    }
    extraGrpc.add(services);
  }

  public synchronized Future<Void> start(Vertx vertx) {
    if (metrics != null) {
      throw new IllegalStateException("gateway already started");
    }
    metrics = new GatewayMetrics(registry, options.bindJvmMetrics(), nanoClock);
    metrics.watch(io.kiln.runtime.time.Deadlines.of(vertx));
    owner = vertx;
    Router router = new Router(new SharedRandom(), Duration.ofSeconds(options.retryAfterSeconds()));
    ModelLookup lookup = new ModelLookup(models, holds);
    Dispatcher dispatcher = new Dispatcher(vertx, pools, router, metrics, options.defaultTimeout().toMillis(), nanoClock,
        models::internal);
    JsonRequestDecoder json = new JsonRequestDecoder(options.maxBodyBytes());
    sharedMemory = new SharedMemoryRegions(SharedMemoryRegions.DEFAULT_DIR, options.maxBodyBytes());
    GatewayContext gw = new GatewayContext(options, lookup, locator, dispatcher,
        new HttpInferDecoder(json, sharedMemory), new JsonResponseEncoder(json.factory()),
        new ErrorMapper(options.retryAfterSeconds()), metrics, registry, () -> started && !closed && !holds.held(), holds,
        spans, sharedMemory);

    // HTTP/1.1 only: with h2c upgrades on, Vert.x opens a connection (and so its read clock) only once the
    // first request's headers are complete, which a slowloris client never sends. Expect: 100-continue is answered
    // by each route once its body limit allows (ExpectContinue), never by Vert.x as the headers arrive.
    HttpServerOptions httpOptions = serverOptions(sharedHttpPort(vertx)).setHttp2ClearTextEnabled(false)
        .setHandle100ContinueAutomatically(false);
    HttpServerOptions grpcOptions = grpcWindows(serverOptions(options.grpcPort()));
    if (options.tls() != null) {
      tls = new TlsReloader(vertx, options.tls());
      httpOptions = tls.secure(httpOptions, false);
      grpcOptions = tls.secure(grpcOptions, true).setHttp2ClearTextEnabled(false);
    }
    HttpServerOptions httpServing = httpOptions;
    deadlines = new ReadDeadlines(vertx, options.requestReadTimeout().toMillis());
    HttpApi httpApi = new HttpApi(vertx, gw, deadlines);
    io.vertx.ext.web.Router httpRouter = httpApi.routes();
    io.vertx.core.Handler<io.vertx.core.http.HttpServerRequest> httpServe = httpApi.handler();
    StreamDispatcher streams = new StreamDispatcher(pools, router, dispatcher, metrics, new StreamMetrics(registry),
        options.defaultTimeout().toMillis(), nanoClock, () -> streamOptions, options.retryAfterSeconds());
    new GenerateApi(gw, streams).register(httpRouter);
    new OpenAiApi(gw, streams, System::currentTimeMillis).register(httpRouter);
    SharedMemoryApi shm = new SharedMemoryApi(vertx, gw, sharedMemory);
    shm.register(httpRouter);
    extraRoutes.forEach(r -> r.accept(httpRouter));
    // While the node drains, every answer asks its client to reconnect, so kept-alive clients move to other nodes.
    io.vertx.core.Handler<io.vertx.core.http.HttpServerRequest> httpHandler = req -> {
      if (holds.draining()) {
        req.response().putHeader(io.vertx.core.http.HttpHeaders.CONNECTION, io.vertx.core.http.HttpHeaders.CLOSE);
      }
      httpServe.handle(req);
    };
    http = vertx.createHttpServer(httpOptions).connectionHandler(deadlines::opened).requestHandler(httpHandler);
    io.vertx.grpc.server.GrpcServer grpcApi = new GrpcApi(vertx, gw).server();
    new GrpcStreamApi(gw, streams).register(grpcApi);
    shm.register(grpcApi);
    extraGrpc.forEach(s -> s.accept(grpcApi));
    grpc = vertx.createHttpServer(grpcOptions).connectionHandler(c -> {
      deadlines.opened(c);
      FlushCoalescing.install(c); // one write per event-loop turn, not two per call
    }).requestHandler(req -> {
      deadlines.requestStarted(req, answered -> { });
      grpcApi.handle(req);
    });
    return http.listen()
        .onSuccess(h -> watchTls(h, false))
        .compose(h -> moreHttpInstances(vertx, httpServing, httpHandler))
        .compose(h -> grpc.listen())
        .onSuccess(g -> watchTls(g, true))
        .<Void>mapEmpty()
        .onSuccess(v -> {
          if (tls != null) {
            tls.start();
          }
          started = true;
        })
        .recover(err -> close().transform(ignored -> Future.failedFuture(err)));
  }

  /**
   * Serves the REST port from more event loops: further servers on the same port (Vert.x shares it,
   * round-robining connections), each deployed on an event loop of its own, so request decoding and
   * encoding use every core rather than one.
   */
  private Future<Void> moreHttpInstances(Vertx vertx, HttpServerOptions httpOptions,
                                         io.vertx.core.Handler<io.vertx.core.http.HttpServerRequest> router) {
    int extra = options.httpEventLoops() - 1;
    if (extra <= 0) {
      return Future.succeededFuture();
    }
    // Vert.x shares a listening port between servers that asked for the same port (0 included).
    HttpServerOptions shared = new HttpServerOptions(httpOptions);
    return vertx.deployVerticle(() -> new io.vertx.core.VerticleBase() {
      @Override
      public Future<?> start() {
        return vertx.createHttpServer(shared).connectionHandler(deadlines::opened).requestHandler(router).listen()
            .onSuccess(s -> watchTls(s, false));
      }
    }, new io.vertx.core.DeploymentOptions().setInstances(extra)).onSuccess(id -> extraHttp = id).mapEmpty();
  }

  /**
   * The port the REST servers ask for. Vert.x shares a port between servers of one Vert.x instance that ask
   * for the same one, but never port 0: each such server gets a random port of its own, so the extra event
   * loops would serve ports nobody knows. A random port is shared when asked for as a negative number, one
   * per gateway (counted in the Vert.x instance's local data), so two gateways on one Vert.x (tests,
   * in-process clusters) keep ports of their own.
   */
  private int sharedHttpPort(Vertx vertx) {
    if (options.httpPort() != 0) {
      return options.httpPort();
    }
    int id = vertx.sharedData().<String, Integer>getLocalMap("kiln.gateway.random-ports").merge("next", 1, Integer::sum);
    return -(id % 65_535 + 1);
  }

  private void watchTls(HttpServer server, boolean http2) {
    if (tls != null) {
      tls.watch(server, http2);
    }
  }

  /** Certificates put in force since start because the TLS files changed; 0 without TLS. */
  public long tlsReloads() {
    TlsReloader t = tls;
    return t == null ? 0 : t.reloads();
  }

  /** Changed TLS files that could not be loaded (the previous certificate stayed in force); 0 without TLS. */
  public long tlsRefusals() {
    TlsReloader t = tls;
    return t == null ? 0 : t.refusals();
  }

  /** The gRPC port's HTTP/2 windows ({@link #GRPC_STREAM_WINDOW}, {@link #GRPC_CONNECTION_WINDOW}) on {@code o}. */
  static HttpServerOptions grpcWindows(HttpServerOptions o) {
    o.getInitialSettings().setInitialWindowSize(GRPC_STREAM_WINDOW);
    return o.setHttp2ConnectionWindowSize(GRPC_CONNECTION_WINDOW);
  }

  /** Explicit interface, bounded request line and headers, and connections that cannot idle for ever. */
  private HttpServerOptions serverOptions(int port) {
    return new HttpServerOptions().setHost(options.host()).setPort(port)
        .setMaxInitialLineLength(HttpServerOptions.DEFAULT_MAX_INITIAL_LINE_LENGTH)
        .setMaxHeaderSize(HttpServerOptions.DEFAULT_MAX_HEADER_SIZE)
        .setIdleTimeoutUnit(java.util.concurrent.TimeUnit.MILLISECONDS)
        .setIdleTimeout((int) Math.min(Integer.MAX_VALUE, options.effectiveIdleTimeout().toMillis()));
  }

  /** See {@link io.kiln.gateway.KilnGateway#spans}; before {@link #start}. */
  public synchronized void spans(io.kiln.pools.trace.Spans value) {
    if (metrics != null) {
      throw new IllegalStateException("spans must be set before the gateway starts");
    }
    spans = java.util.Objects.requireNonNull(value, "spans");
  }

  /** See {@link io.kiln.gateway.KilnGateway#streamOptions}; any time, from any thread. */
  public void streamOptions(io.kiln.gateway.StreamOptions value) {
    streamOptions = java.util.Objects.requireNonNull(value, "streamOptions");
  }

  /** See {@link io.kiln.gateway.KilnGateway#holdReadiness}; any time, from any thread. */
  public io.kiln.gateway.ReadinessHold holdReadiness(String reason) {
    return holds.hold(reason);
  }

  /** See {@link io.kiln.gateway.KilnGateway#holdServerReadiness}; any time, from any thread. */
  public io.kiln.gateway.ReadinessHold holdServerReadiness(String reason) {
    return holds.hold(reason, false);
  }

  /** Inference requests received and not yet answered; 0 before start. */
  public synchronized int requestsInFlight() {
    GatewayMetrics m = metrics;
    return m == null ? 0 : m.inFlight();
  }

  /** Connections closed because their client was too slow to send a request, since start. */
  public long slowConnectionsClosed() {
    ReadDeadlines d = deadlines;
    return d == null ? 0 : d.closedCount();
  }

  public synchronized Future<Void> close() {
    if (closed) {
      return Future.succeededFuture();
    }
    closed = true;
    if (tls != null) {
      tls.stop();
    }
    String more = extraHttp;
    Future<Void> h = (more != null ? owner.undeploy(more).recover(e -> Future.succeededFuture()) : Future.<Void>succeededFuture())
        .compose(v -> http != null ? http.close() : Future.succeededFuture());
    Future<Void> g = grpc != null ? grpc.close() : Future.succeededFuture();
    GatewayMetrics m = metrics;
    SharedMemoryRegions shm = sharedMemory;
    return Future.join(h, g).<Void>mapEmpty().onComplete(ar -> {
      if (shm != null) {
        shm.close();
      }
      if (m != null) {
        m.close();
      }
      if (ownRegistry) {
        registry.close();
      }
    });
  }

  public int httpPort() {
    HttpServer s = http;
    if (s == null || !started) {
      throw new IllegalStateException("gateway not started");
    }
    return s.actualPort();
  }

  public int grpcPort() {
    HttpServer s = grpc;
    if (s == null || !started) {
      throw new IllegalStateException("gateway not started");
    }
    return s.actualPort();
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /**
   * Each call uses the calling thread's generator, so one router can serve every event loop; the SPI's
   * randomness needs no seeding across threads.
   */
  private static final class SharedRandom implements RandomGenerator {
    @Override
    public long nextLong() {
      return ThreadLocalRandom.current().nextLong();
    }

    @Override
    public int nextInt(int bound) {
      return ThreadLocalRandom.current().nextInt(bound);
    }
  }
}
