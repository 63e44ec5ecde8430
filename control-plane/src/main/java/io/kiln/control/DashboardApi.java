package io.kiln.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.Answers;
import io.kiln.control.impl.ClusterSeries;
import io.kiln.control.impl.ClusterState;
import io.kiln.control.impl.QueryParams;
import io.kiln.control.impl.RequestSampler;
import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.WireCodec;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.runtime.gpu.GpuSnapshot;
import io.kiln.serve.ServeController;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The web dashboard every node serves on its gateway's HTTP port:
 * <ul>
 *   <li>{@code GET /dashboard[?token=T]} — the page (one HTML, {@code /dashboard/dashboard.js},
 *       {@code /dashboard/dashboard.css}, bundled in the jar: no CDN, no build step). The page holds no data and is
 *       served without a token; it reads {@code token} once from its own address, keeps it in the tab's
 *       {@code sessionStorage}, removes it from the address bar and sends it as {@code Authorization: Bearer} on
 *       every fetch (never in a URL). Without one it asks for it when the data endpoint answers 401.</li>
 *   <li>{@code GET /api/v1/dashboard[?window=SECONDS]} — what the page polls once a second (JSON): the cluster (nodes
 *       with resources, GPUs, labels, alive or down and since when, the leader), deployments (phase, desired and
 *       serving version, pools per node with workers, queue depth and in flight, every worker with its state and
 *       restarts), the cluster-wide per-model request series of the last {@code window} seconds (10..
 *       {@value #WINDOW_SECONDS}, default {@value #WINDOW_SECONDS}: requests/s, errors/s, p50 and p99 in ms), the
 *       text generation models' panel ({@code llm}: per model, over the last {@value #LLM_SECONDS} s, time to first
 *       token p50/p99, inter-token latency p50, output tokens/s, prefix-cache hit rate, preemptions; running and
 *       waiting sequences and KV-cache use as the nodes last reported them), and
 *       the newest pipeline runs (with their steps and nodes) and jobs. Management token as {@code /api/v1}
 *       (401 without it); 400 naming the parameter for an unknown, repeated, too long or invalid one; 503 with
 *       {@code Retry-After} if the cluster's state does not arrive within {@value #ANSWER_TIMEOUT_MS} ms.</li>
 * </ul>
 * The series come from every node's {@link RequestSampler} (see {@link ClusterSeries}); polls within
 * {@value #REUSE_MS} ms of each other share one read of the cluster, however many pages watch.
 *
 * <p>Threading: handlers never block; {@link #start} begins sampling and answering other nodes, {@link #close}
 * stops both.
 */
public final class DashboardApi implements AutoCloseable {

  public static final int WINDOW_SECONDS = 300;
  public static final int MIN_WINDOW_SECONDS = 10;
  public static final long SAMPLE_PERIOD_MS = 1000;
  /** The seconds the "Generative models" panel's rates and percentiles cover (the window, if shorter). */
  public static final int LLM_SECONDS = 60;
  static final long REUSE_MS = 500;
  /** A poll the cluster's state has not answered by then gets 503 with {@code Retry-After} (never a hang). */
  static final long ANSWER_TIMEOUT_MS = 5000;
  /** Longest token the page's address may carry. */
  public static final int MAX_TOKEN_CHARS = 512;

  private static final ObjectMapper JSON = WireCodec.json();
  private static final String RESOURCES = "/io/kiln/control/dashboard/";
  private static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
      + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private final KilnRuntime runtime;
  private final Handler<RoutingContext> authorize;
  private final Clock clock;
  private final RequestSampler sampler;
  private final ClusterSeries series;
  private final ClusterState state;
  private final Buffer html;
  private final Buffer js;
  private final Buffer css;
  private volatile long timer = -1;
  private volatile boolean closed;
  private CompletableFuture<ObjectNode> current; // the latest read of the cluster, shared by polls close together
  private long currentAtMs;

  /**
   * @param pools the pools as the node's gateway port reports them (the same adapter its inference uses)
   * @param pipelines the node's pipelines (their runs), or null for none
   * @param jobs the node's jobs, or null for none
   * @param registry the node's registry, holding the gateway's request timers
   * @param token the management token, or null/empty for none
   */
  public DashboardApi(KilnRuntime runtime, ServeController serve, PoolAdmin pools, Pipelines pipelines, Jobs jobs,
                      MeterRegistry registry, String token) {
    this(runtime, serve, pools, pipelines, jobs, registry, token, Clock.systemUTC());
  }

  /** As above, on {@code clock} (sample seconds, "down since"). */
  public DashboardApi(KilnRuntime runtime, ServeController serve, PoolAdmin pools, Pipelines pipelines, Jobs jobs,
                      MeterRegistry registry, String token, Clock clock) {
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.authorize = Answers.authorize(token);
    this.clock = Objects.requireNonNull(clock, "clock");
    this.sampler = new RequestSampler(Objects.requireNonNull(registry, "registry"), clock, WINDOW_SECONDS + 5);
    this.series = new ClusterSeries(runtime.vertx(), runtime.nodeId(), sampler, this::localGpus, WINDOW_SECONDS + 5);
    this.state = new ClusterState(runtime, Objects.requireNonNull(serve, "serve"),
        Objects.requireNonNull(pools, "pools"), pipelines, jobs, clock);
    this.html = resource("index.html");
    this.js = resource("dashboard.js");
    this.css = resource("dashboard.css");
  }

  /** Takes the first sample and answers other nodes' dashboards from now on; samples once a second until closed. */
  public CompletionStage<Void> start() {
    sampler.sample();
    scheduleSample();
    return series.listen().toCompletionStage();
  }

  /**
   * The next read half-way through the next second of the clock: a sample then always falls in the second it is
   * labelled with even when its timer runs up to half a second late, so no second is left empty and the next one
   * doubled (every node's clock-aligned reads line up with the others' too).
   */
  private void scheduleSample() {
    if (closed) {
      return;
    }
    long now = clock.millis();
    long next = Math.floorDiv(now, SAMPLE_PERIOD_MS) * SAMPLE_PERIOD_MS + SAMPLE_PERIOD_MS / 2;
    if (next <= now + SAMPLE_PERIOD_MS / 10) {
      next += SAMPLE_PERIOD_MS; // this second's read is done (or too close to tell): the next second's
    }
    timer = runtime.vertx().setTimer(Math.max(1, next - now), id -> {
      try {
        sampler.sample();
      } finally {
        scheduleSample();
      }
    });
  }

  /** Mounts the page and the data endpoint on {@code r}; mount it before routers that take all of {@code /api/v1/}. */
  public void mount(Router r) {
    r.get("/dashboard").handler(ctx -> asset(ctx, html, "text/html; charset=utf-8", Map.of("token", MAX_TOKEN_CHARS)));
    r.get("/dashboard/").handler(ctx -> asset(ctx, html, "text/html; charset=utf-8", Map.of("token", MAX_TOKEN_CHARS)));
    r.get("/dashboard/dashboard.js").handler(ctx -> asset(ctx, js, "text/javascript; charset=utf-8", Map.of()));
    r.get("/dashboard/dashboard.css").handler(ctx -> asset(ctx, css, "text/css; charset=utf-8", Map.of()));
    r.get("/api/v1/dashboard").handler(authorize).handler(this::data);
  }

  private void asset(RoutingContext ctx, Buffer body, String type, Map<String, Integer> params) {
    String bad = QueryParams.check(ctx.request().query(), ctx.queryParams(), params);
    if (bad != null) {
      Answers.error(ctx, 400, bad);
      return;
    }
    ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, type)
        .putHeader("Content-Security-Policy", CSP)
        .putHeader("X-Content-Type-Options", "nosniff")
        .putHeader("Referrer-Policy", "no-referrer")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache")
        .end(body);
  }

  private void data(RoutingContext ctx) {
    String bad = QueryParams.check(ctx.request().query(), ctx.queryParams(), Map.of("window", 4));
    if (bad != null) {
      Answers.error(ctx, 400, bad);
      return;
    }
    int window = WINDOW_SECONDS;
    String w = ctx.queryParams().get("window");
    if (w != null) {
      try {
        window = Integer.parseInt(w);
      } catch (NumberFormatException e) {
        window = -1;
      }
      if (window < MIN_WINDOW_SECONDS || window > WINDOW_SECONDS) {
        Answers.error(ctx, 400, "window must be a whole number of seconds from " + MIN_WINDOW_SECONDS + " to "
            + WINDOW_SECONDS);
        return;
      }
    }
    int shown = window;
    AtomicBoolean answered = new AtomicBoolean();
    long late = runtime.vertx().setTimer(ANSWER_TIMEOUT_MS, id -> {
      if (answered.compareAndSet(false, true)) {
        Answers.unavailable(ctx, 1,
            "the cluster's state did not arrive within " + ANSWER_TIMEOUT_MS + " ms; try again");
      }
    });
    snapshot().whenComplete((snap, err) -> {
      runtime.vertx().cancelTimer(late);
      if (!answered.compareAndSet(false, true)) {
        return;
      }
      if (err != null) {
        Answers.error(ctx, 500, "reading the cluster failed: " + err);
        return;
      }
      try {
        ObjectNode o = JSON.createObjectNode().put("node", runtime.nodeId()).put("nowMs", clock.millis())
            .put("samplePeriodMs", SAMPLE_PERIOD_MS);
        o.setAll(snap);
        TreeSet<String> names = new TreeSet<>();
        snap.path("deployments").forEach(d -> names.add(d.path("name").asText()));
        o.set("series", series.render(clock.millis() / 1000 - 1, shown, names));
        o.set("llm", series.llm(clock.millis() / 1000 - 1, Math.min(LLM_SECONDS, shown)));
        ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
            .putHeader(HttpHeaders.CACHE_CONTROL, "no-store").end(WireCodec.toJson(o));
      } catch (RuntimeException e) {
        Answers.error(ctx, 500, "rendering the dashboard failed: " + e);
      }
    });
  }

  /** One read of the cluster (series refreshed from every live node, then the state), shared by close polls. */
  private synchronized CompletionStage<ObjectNode> snapshot() {
    long now = clock.millis();
    boolean fresh = current != null && !current.isCompletedExceptionally()
        && (current.isDone() ? now - currentAtMs < REUSE_MS : now - currentAtMs < ANSWER_TIMEOUT_MS);
    if (fresh) {
      return current;
    }
    currentAtMs = now;
    List<String> alive = runtime.clusterView().nodes().stream().filter(NodeView::alive).map(NodeView::nodeId).toList();
    CompletableFuture<ObjectNode> next = new CompletableFuture<>();
    current = next;
    series.refresh(alive)
        .thenCompose(v -> state.read(JSON.createObjectNode(), series::gpus))
        .whenComplete((o, e) -> {
          if (e != null) {
            next.completeExceptionally(e);
          } else {
            next.complete(o);
          }
        });
    return next;
  }

  /** This node's GPUs as {@code nvidia-smi} last reported them, or null without GPU sampling. */
  private JsonNode localGpus() {
    GpuSnapshot s = runtime.localService(GpuSampler.class).map(GpuSampler::latest).orElse(null);
    if (s == null || !s.sampled()) {
      return null;
    }
    ArrayNode a = JSON.createArrayNode();
    for (GpuSnapshot.DeviceSample d : s.devices()) {
      ObjectNode g = a.addObject().put("index", d.index());
      number(g, "memoryUsedBytes", d.memoryUsedBytes());
      number(g, "memoryTotalBytes", d.memoryTotalBytes());
      number(g, "utilization", d.utilization());
    }
    return a;
  }

  private static void number(ObjectNode o, String field, double v) {
    if (Double.isNaN(v)) {
      o.putNull(field);
    } else {
      o.put(field, v);
    }
  }

  private static Buffer resource(String name) {
    try (InputStream in = DashboardApi.class.getResourceAsStream(RESOURCES + name)) {
      if (in == null) {
        throw new IllegalStateException("dashboard asset missing from the jar: " + RESOURCES + name);
      }
      return Buffer.buffer(in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Stops sampling and answering other nodes; the routes stay mounted and answer from what is left. */
  public CompletionStage<Void> closeAsync() {
    closed = true;
    if (timer >= 0) {
      runtime.vertx().cancelTimer(timer);
    }
    return series.close().toCompletionStage();
  }

  @Override
  public void close() {
    closeAsync().toCompletableFuture().join();
  }
}
