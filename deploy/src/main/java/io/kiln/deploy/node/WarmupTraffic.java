package io.kiln.deploy.node;

import io.kiln.deploy.node.WarmupReport.Protocol;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.AsyncResult;
import io.vertx.core.Context;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The warm-up's load: closed-loop OIP requests to one or more models ({@link Target}s) through a node's own HTTP
 * and gRPC ports, every protocol at once (HTTP JSON, HTTP with binary tensors and binary outputs, gRPC with
 * {@code raw_input_contents}). First one request in flight per protocol ({@link #SOLO}, a tenth of the
 * budget, at most {@link #SOLO_MAX}), then {@link #LANES} per protocol spread over the targets, a quarter of
 * each target's lanes sending its larger warm-up batch sizes (batch shapes), until the {@link Plateau throughput
 * levels off} and the JIT has caught up ({@link JitQuiet}, where the JVM reports its compilation time), or the
 * budget or the request cap runs out. Every lane sends at least one request, so a short warm-up still crosses
 * every path. Requests are synthesised from each model's signature ({@link WarmupRequests}). A streaming model
 * ({@link Target#streaming}) takes no {@code /infer}: its lanes use the generate extension instead, {@code generate}
 * for JSON, {@code generate_stream} (its whole event stream read) for the binary lane, {@code ModelStreamInfer} for
 * gRPC. Answers (HTTP 200, gRPC OK, no error event or message) are counted by protocol and outcome into
 * {@code kiln.warmup.requests}, and by target; their content is not otherwise read.
 *
 * <p>Threading: construct it on a thread of no Vert.x context (then its clients belong to no verticle, such as
 * an actor's, that might close them); the lanes run on event-loop contexts of their own (a small verticle,
 * one instance per core up to 4). {@link #run} returns at once, {@link #stop} ends it early from any thread.
 */
final class WarmupTraffic {

  /** The single-request phase's share of the budget, and its longest duration. */
  static final double SOLO = 0.1;
  static final Duration SOLO_MAX = Duration.ofMillis(500);
  /** Requests in flight per protocol in the main phase (the concurrency Kiln's benchmarks use). */
  static final int LANES = 16;
  /** Every {@code BATCH_LANE}th lane of the main phase sends 8-row requests. */
  static final int BATCH_LANE = 4;
  static final long SAMPLE_NANOS = 250_000_000L;
  /** After this many failures without an answer the traffic stops: the node would only be slowed by it. */
  static final int GIVE_UP_AFTER = 100;
  private static final long REQUEST_TIMEOUT_MS = 10_000;
  private static final String HEADER_LENGTH = "Inference-Header-Content-Length";
  private static final Logger LOG = LoggerFactory.getLogger(WarmupTraffic.class);

  /**
   * One model the traffic drives: its name and its requests by warm-up batch size, the one-row (or smallest)
   * first. Its counts are this run's.
   */
  static final class Target {
    final String model;
    final boolean streaming;
    final List<WarmupRequests> requests;
    final AtomicLong answered = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    volatile String lastFailure;

    Target(String model, List<WarmupRequests> requests) {
      this(model, false, requests);
    }

    /** @param streaming a streaming model's target: its requests go through the generate extension, one row each */
    Target(String model, boolean streaming, List<WarmupRequests> requests) {
      if (requests.isEmpty()) {
        throw new IllegalArgumentException("target " + model + " has no requests");
      }
      this.model = model;
      this.streaming = streaming;
      this.requests = List.copyOf(requests);
    }

    /** The requests of a main-phase lane: every {@value #BATCH_LANE}th sends a larger batch, in turn. */
    WarmupRequests forLane(int i, boolean batches) {
      if (!batches || requests.size() == 1 || i % BATCH_LANE != BATCH_LANE - 1) {
        return requests.get(0);
      }
      return requests.get(1 + (i / BATCH_LANE) % (requests.size() - 1));
    }
  }

  private final Vertx vertx;
  private final String host;
  private final List<Target> targets;
  private final LongSupplier nanoClock;
  private final HttpClientAgent http;
  private final HttpClientAgent h2;
  private final GrpcClient grpc;
  private final SocketAddress grpcAddress;
  private final Map<Target, RequestOptions> jsonRequest = new java.util.IdentityHashMap<>();
  private final Map<Target, RequestOptions> binaryRequest = new java.util.IdentityHashMap<>();
  private final Map<Target, RequestOptions> generateRequest = new java.util.IdentityHashMap<>();
  private final Map<Target, RequestOptions> generateStreamRequest = new java.util.IdentityHashMap<>();
  // The meters show on /metrics; the counts are this run's own (a registry may outlive one warm-up).
  private final Map<Protocol, Counter> answeredMeter = new EnumMap<>(Protocol.class);
  private final Map<Protocol, Counter> failedMeter = new EnumMap<>(Protocol.class);
  private final Map<Protocol, AtomicLong> answered = new EnumMap<>(Protocol.class);
  private final Map<Protocol, AtomicLong> failed = new EnumMap<>(Protocol.class);
  private final AtomicLong answeredTotal = new AtomicLong();
  private final AtomicLong failedTotal = new AtomicLong();
  private volatile String lastFailure;
  private volatile boolean stopped;
  private volatile boolean finishing;
  private volatile String lanesDeployment;
  private volatile boolean settled;
  private final LongSupplier compileMillis;

  /**
   * Where this node's own gateway listens, as the warm-up reaches it (a loopback address, its HTTP and gRPC ports,
   * its TLS files or null), and how traffic to it is opened.
   */
  record Ports(String host, int httpPort, int grpcPort, io.kiln.gateway.TlsFiles tls) {

    /** Traffic to {@code targets} on these ports, built off any context so that its clients belong to no verticle. */
    java.util.concurrent.CompletableFuture<WarmupTraffic> open(Vertx vertx, List<Target> targets,
                                                               MeterRegistry registry, LongSupplier nanoClock) {
      return java.util.concurrent.CompletableFuture.supplyAsync(() -> new WarmupTraffic(vertx, host, httpPort,
          grpcPort, tls == null ? null : tls.read().certChain(), targets, registry, nanoClock, jitClock()));
    }
  }

  /**
   * @param trustedChain with TLS on the node, its own PEM certificate chain, the only one these clients trust
   *     (they talk to their own node's ports, whose address the certificate need not name); null for plain text
   * @param compileMillis the JVM's total compilation time so far, or null where it is not reported (see
   *     {@link #jitClock()})
   */
  WarmupTraffic(Vertx vertx, String host, int httpPort, int grpcPort, String trustedChain, List<Target> targets,
                MeterRegistry registry, LongSupplier nanoClock, LongSupplier compileMillis) {
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("no warm-up targets");
    }
    this.vertx = vertx;
    this.compileMillis = compileMillis;
    this.host = host;
    this.targets = List.copyOf(targets);
    this.nanoClock = nanoClock;
    http = vertx.createHttpClient(secure(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
        .setPipelining(false).setMaxRedirects(0).setConnectTimeout((int) REQUEST_TIMEOUT_MS), trustedChain, false),
        new PoolOptions().setHttp1MaxSize(2 * LANES).setMaxWaitQueueSize(-1));
    h2 = vertx.createHttpClient(secure(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
        .setHttp2ClearTextUpgrade(false).setTcpNoDelay(true).setConnectTimeout((int) REQUEST_TIMEOUT_MS), trustedChain,
        true), new PoolOptions().setHttp2MaxSize(1));
    grpc = GrpcClient.client(vertx, h2);
    grpcAddress = SocketAddress.inetSocketAddress(grpcPort, host);
    for (Target t : this.targets) {
      String uri = "/v2/models/" + t.model + "/infer";
      jsonRequest.put(t, request(httpPort, uri).putHeader("content-type", "application/json"));
      binaryRequest.put(t, request(httpPort, uri).putHeader("content-type", "application/octet-stream"));
      String model = "/v2/models/" + t.model;
      generateRequest.put(t, request(httpPort, model + "/generate").putHeader("content-type", "application/json"));
      generateStreamRequest.put(t, request(httpPort, model + "/generate_stream")
          .putHeader("content-type", "application/json"));
    }
    for (Protocol p : Protocol.values()) {
      answeredMeter.put(p, counter(registry, p, "ok"));
      failedMeter.put(p, counter(registry, p, "failed"));
      answered.put(p, new AtomicLong());
      failed.put(p, new AtomicLong());
    }
  }

  private static HttpClientOptions secure(HttpClientOptions o, String trustedChain, boolean http2) {
    if (trustedChain == null) {
      return o;
    }
    return o.setSsl(true).setVerifyHost(false).setUseAlpn(http2)
        .setTrustOptions(new io.vertx.core.net.PemTrustOptions().addCertValue(io.vertx.core.buffer.Buffer.buffer(trustedChain)));
  }

  // No per-request connect timeout: the pool has a connection for every lane, and Vert.x 5.0's pool-wait timer can
  // fire after the wait was served and log "Promise already completed" ERRORs; the TCP connect keeps its bound
  // (the clients' own connect timeout) and every request its idle timeout.
  private RequestOptions request(int port, String uri) {
    return new RequestOptions().setMethod(HttpMethod.POST).setHost(host).setPort(port).setURI(uri)
        .setIdleTimeout(REQUEST_TIMEOUT_MS);
  }

  private static Counter counter(MeterRegistry registry, Protocol p, String outcome) {
    return Counter.builder("kiln.warmup.requests")
        .description("Requests a node sent itself while warming its serving path before it reported ready")
        .tags("protocol", p.tag(), "outcome", outcome).register(registry);
  }

  /** Runs the phases within {@code budget} and {@code maxRequests}. */
  Future<Void> run(Duration budget, long maxRequests) {
    long start = nanoClock.getAsLong();
    List<Context> contexts = new CopyOnWriteArrayList<>();
    int instances = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
    Future<Void> deployed = vertx.deployVerticle(() -> new VerticleBase() {
      @Override
      public Future<?> start() {
        contexts.add(context);
        return Future.succeededFuture();
      }
    }, new DeploymentOptions().setInstances(instances)).map(id -> {
      lanesDeployment = id;
      return null;
    });
    long solo = Math.min(SOLO_MAX.toNanos(), (long) (budget.toNanos() * SOLO));
    long soloCap = Math.max(1, maxRequests / 20);
    return deployed
        .compose(v -> phase("solo", 1, start + solo, soloCap, contexts, false))
        .compose(v -> phase("main", LANES, start + budget.toNanos(), Math.max(1, maxRequests - answeredTotal.get()),
            contexts, true));
  }

  /** Whether the main phase ended because the JIT had caught up (or the throughput had levelled off). */
  boolean settled() {
    return settled;
  }

  /** This JVM's total compilation time in milliseconds, or null where the JVM does not report it. */
  static LongSupplier jitClock() {
    java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit::getTotalCompilationTime : null;
  }

  /**
   * Ends the traffic soon, yet crossing every path: each lane still sends its first request, then stops (the
   * user's models take the warm-up over).
   */
  void finishSoon() {
    finishing = true;
  }

  /** Ends the traffic: lanes send nothing more; what is in flight is still counted. */
  void stop() {
    stopped = true;
  }

  long answered(Protocol p) {
    return answered.get(p).get();
  }

  long failed(Protocol p) {
    return failed.get(p).get();
  }

  /** The last failure seen, or null. */
  String lastFailure() {
    return lastFailure;
  }

  Future<Void> close() {
    String lanes = lanesDeployment;
    Future<Void> undeployed = lanes == null ? Future.succeededFuture() : vertx.undeploy(lanes);
    return Future.join(grpc.close(), http.close(), undeployed).transform(ar -> h2.close());
  }

  /**
   * Runs {@code concurrency} lanes per protocol (at least one per target) until the deadline or the cap (or,
   * {@code adaptive}, until the throughput levels off and the JIT is quiet); in a phase of more than
   * {@value #BATCH_LANE} lanes every {@value #BATCH_LANE}th lane of a target sends one of its larger batches.
   */
  private Future<Void> phase(String name, int concurrency, long deadline, long cap, List<Context> contexts,
                             boolean adaptive) {
    Promise<Void> done = Promise.promise();
    long began = nanoClock.getAsLong();
    long answeredBefore = answeredTotal.get();
    int perProtocol = Math.max(concurrency, targets.size());
    AtomicInteger lanes = new AtomicInteger(perProtocol * Protocol.values().length);
    AtomicLong issued = new AtomicLong();
    Plateau plateau = new Plateau();
    JitQuiet jit = new JitQuiet();
    long sampler = !adaptive ? -1 : vertx.setPeriodic(SAMPLE_NANOS / 1_000_000, id -> {
      long now = nanoClock.getAsLong();
      plateau.sample(now, answeredTotal.get() - answeredBefore);
      if (compileMillis != null) {
        jit.sample(now, compileMillis.getAsLong());
      }
      settled = plateau.reached() && (compileMillis == null || jit.reached());
    });
    Runnable laneDone = () -> {
      if (lanes.decrementAndGet() == 0) {
        if (sampler >= 0) {
          vertx.cancelTimer(sampler);
        }
        LOG.debug("warm-up phase {} ({} per protocol): {} requests answered in {} ms{}", name, concurrency,
            answeredTotal.get() - answeredBefore, (nanoClock.getAsLong() - began) / 1_000_000,
            adaptive ? (settled ? ", settled" : ", not settled") : "");
        done.complete();
      }
    };
    int n = 0;
    for (Protocol p : Protocol.values()) {
      for (int i = 0; i < perProtocol; i++) {
        Target target = targets.get(i % targets.size());
        WarmupRequests requests = target.forLane(i / targets.size(), concurrency > BATCH_LANE);
        Lane lane = new Lane(p, target, requests, deadline, cap, issued, laneDone);
        contexts.get(n++ % contexts.size()).runOnContext(v -> lane.next());
      }
    }
    return done.future();
  }

  /** One request in flight at a time, again and again until its phase is over; it always sends one. */
  private final class Lane {
    private final Protocol protocol;
    private final Target target;
    private final WarmupRequests requests;
    private final long deadline;
    private final long cap;
    private final AtomicLong issued;
    private final Runnable finished;
    private boolean sent;

    Lane(Protocol protocol, Target target, WarmupRequests requests, long deadline, long cap, AtomicLong issued,
         Runnable finished) {
      this.protocol = protocol;
      this.target = target;
      this.requests = requests;
      this.deadline = deadline;
      this.cap = cap;
      this.issued = issued;
      this.finished = finished;
    }

    void next() {
      if ((sent || stopped) && over()) {
        finished.run();
        return;
      }
      sent = true;
      issued.incrementAndGet();
      send(protocol, target, requests).onComplete(ar -> {
        if (count(protocol, target, ar)) {
          next();
        } else {
          vertx.setTimer(5, id -> next()); // no tight loop against a front end that refuses
        }
      });
    }

    private boolean over() {
      return stopped || settled || finishing || nanoClock.getAsLong() - deadline >= 0 || issued.get() >= cap
          || (answeredTotal.get() == 0 && failedTotal.get() >= GIVE_UP_AFTER);
    }
  }

  /** Counts one outcome; true for an answer. */
  private boolean count(Protocol protocol, Target target, AsyncResult<String> ar) {
    if (ar.succeeded() && ar.result() == null) {
      target.answered.incrementAndGet();
      answered.get(protocol).incrementAndGet();
      answeredMeter.get(protocol).increment();
      answeredTotal.incrementAndGet();
      return true;
    }
    failed.get(protocol).incrementAndGet();
    failedMeter.get(protocol).increment();
    failedTotal.incrementAndGet();
    target.failed.incrementAndGet();
    lastFailure = protocol.tag() + ": " + (ar.succeeded() ? ar.result() : String.valueOf(ar.cause()));
    target.lastFailure = lastFailure;
    return false;
  }

  /** Sends one request; the future holds null for an answer, else what was wrong with it. */
  private Future<String> send(Protocol p, Target t, WarmupRequests r) {
    if (t.streaming) {
      return switch (p) {
        case HTTP_JSON -> http.request(generateRequest.get(t)).compose(req -> req.send(r.generate))
            .compose(resp -> resp.end().map(v -> resp.statusCode() == 200 ? null : "HTTP " + resp.statusCode()));
        case HTTP_BINARY -> http.request(generateStreamRequest.get(t)).compose(req -> req.send(r.generate))
            .compose(resp -> resp.body().map(body -> resp.statusCode() != 200 ? "HTTP " + resp.statusCode()
                : body.toString(java.nio.charset.StandardCharsets.UTF_8).contains("event: error")
                ? "generate_stream ended with an error event" : null));
        case GRPC -> grpcStream(r);
      };
    }
    return switch (p) {
      case HTTP_JSON -> http.request(jsonRequest.get(t)).compose(req -> req.send(r.json))
          .compose(resp -> resp.end().map(v -> resp.statusCode() == 200 ? null : "HTTP " + resp.statusCode()));
      case HTTP_BINARY -> http.request(new RequestOptions(binaryRequest.get(t)).putHeader(HEADER_LENGTH, r.binaryHeaderLength))
          .compose(req -> req.send(r.binary))
          .compose(resp -> resp.end().map(v -> resp.statusCode() == 200 ? null : "HTTP " + resp.statusCode()));
      case GRPC -> grpcCall(r);
    };
  }

  /** One ModelStreamInfer call of one request, read to its end; an error message in the stream is a failure. */
  private Future<String> grpcStream(WarmupRequests r) {
    return grpc.request(grpcAddress, GRPCInferenceServiceGrpcClient.ModelStreamInfer)
        .compose(req -> {
          req.idleTimeout(REQUEST_TIMEOUT_MS);
          return req.send(r.grpc);
        })
        .compose(resp -> {
          String[] error = new String[1];
          resp.handler(m -> {
            if (!m.getErrorMessage().isEmpty()) {
              error[0] = m.getErrorMessage();
            }
          });
          return resp.end().transform(ar -> {
            GrpcStatus s = resp.status();
            return Future.succeededFuture(s != GrpcStatus.OK
                ? "gRPC " + s + (resp.statusMessage() != null ? " " + resp.statusMessage() : "")
                : error[0] != null ? "ModelStreamInfer: " + error[0] : null);
          });
        });
  }

  private Future<String> grpcCall(WarmupRequests r) {
    return grpc.request(grpcAddress, GRPCInferenceServiceGrpcClient.ModelInfer)
        .compose(req -> {
          req.idleTimeout(REQUEST_TIMEOUT_MS);
          return req.send(r.grpc);
        })
        .compose(resp -> {
          resp.handler(ignored -> { });
          return resp.end().transform(ar -> {
            GrpcStatus s = resp.status();
            return Future.succeededFuture(s == GrpcStatus.OK ? null
                : "gRPC " + s + (resp.statusMessage() != null ? " " + resp.statusMessage() : ""));
          });
        });
  }
}
