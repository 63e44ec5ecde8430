package io.kiln.deploy.tracing;

import io.kiln.pools.trace.Spans;
import io.kiln.pools.trace.TraceParent;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A node's span export: the OpenTelemetry SDK's tracer, batching spans to an OTLP/HTTP (protobuf) endpoint
 * ({@code --otel-endpoint}, {@code OTEL_EXPORTER_OTLP_ENDPOINT}). Resource and sampler from the standard
 * variables ({@link OtelEnvironment}): by default {@code service.name=kiln}, {@code service.instance.id=<node>},
 * sampling follows the parent (a request without one starts a sampled trace).
 * Created only when an endpoint is configured; otherwise no SDK class is loaded.
 */
public final class OtelSpans implements Spans, AutoCloseable {

  /** The OpenTelemetry SDK's environment variable for the endpoint (its {@code /v1/traces} is appended). */
  public static final String ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT";

  private static final TextMapGetter<Map<String, String>> MAP = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(Map<String, String> carrier) {
      return carrier.keySet();
    }

    @Override
    public String get(Map<String, String> carrier, String key) {
      return carrier == null ? null : carrier.get(key);
    }
  };

  private final SdkTracerProvider provider;
  private final Tracer tracer;
  private final String endpoint;

  private OtelSpans(SdkTracerProvider provider, String endpoint) {
    this.provider = provider;
    this.tracer = provider.get("io.kiln");
    this.endpoint = endpoint;
  }

  /**
   * Starts the export to {@code endpoint} (an OTLP/HTTP base such as {@code http://collector:4318}, to which
   * {@code /v1/traces} is appended unless it ends so already).
   *
   * @throws IllegalArgumentException if it is no http(s) URL
   */
  public static OtelSpans start(String endpoint, String nodeId) {
    return start(endpoint, nodeId, OtelEnvironment.from(System.getenv()));
  }

  /** As {@link #start(String, String)}, with the resource and sampler of {@code otel}. */
  public static OtelSpans start(String endpoint, String nodeId, OtelEnvironment otel) {
    String traces = tracesUrl(endpoint);
    OtlpHttpSpanExporter exporter = OtlpHttpSpanExporter.builder().setEndpoint(traces)
        .setTimeout(Duration.ofSeconds(10)).build();
    SdkTracerProvider provider = SdkTracerProvider.builder()
        .setResource(Resource.getDefault().merge(Resource.create(otel.attributes(nodeId))))
        .setSampler(otel.sampler())
        .addSpanProcessor(BatchSpanProcessor.builder(exporter).setScheduleDelay(Duration.ofMillis(500))
            .setMaxQueueSize(8192).build())
        .build();
    return new OtelSpans(provider, traces);
  }

  /** The traces URL of an OTLP/HTTP endpoint. */
  public static String tracesUrl(String endpoint) {
    URI u;
    try {
      u = URI.create(endpoint.strip());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a URL: '" + endpoint + "'");
    }
    if (u.getScheme() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https")) || u.getHost() == null) {
      throw new IllegalArgumentException("must be an http:// or https:// URL, got '" + endpoint + "'");
    }
    String s = u.toString();
    if (s.endsWith("/v1/traces")) {
      return s;
    }
    return (s.endsWith("/") ? s.substring(0, s.length() - 1) : s) + "/v1/traces";
  }

  public String endpoint() {
    return endpoint;
  }

  @Override
  public boolean enabled() {
    return true;
  }

  @Override
  public Span start(String name, TraceParent parent, String tracestate, boolean server) {
    Context ctx = Context.root();
    if (parent != null) {
      ctx = W3CTraceContextPropagator.getInstance().extract(ctx, tracestate == null
          ? Map.of("traceparent", parent.value()) : Map.of("traceparent", parent.value(), "tracestate", tracestate), MAP);
    }
    io.opentelemetry.api.trace.Span s = tracer.spanBuilder(name).setParent(ctx)
        .setSpanKind(server ? SpanKind.SERVER : SpanKind.INTERNAL).startSpan();
    return new OtelSpan(s);
  }

  /** Exports what is pending (waits up to 5 s) and stops. */
  @Override
  public void close() {
    provider.shutdown().join(5, TimeUnit.SECONDS);
  }

  /** Exports what is pending, waiting up to {@code timeout}. */
  public void flush(Duration timeout) {
    provider.forceFlush().join(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  private static final class OtelSpan implements Span {
    private final io.opentelemetry.api.trace.Span span;

    OtelSpan(io.opentelemetry.api.trace.Span span) {
      this.span = span;
    }

    @Override
    public TraceParent context() {
      SpanContext c = span.getSpanContext();
      return TraceParent.of(c.getTraceId(), c.getSpanId(), c.isSampled());
    }

    @Override
    public Span attribute(String key, String value) {
      span.setAttribute(key, value);
      return this;
    }

    @Override
    public Span attribute(String key, long value) {
      span.setAttribute(key, value);
      return this;
    }

    @Override
    public Span error(String description) {
      span.setStatus(StatusCode.ERROR, description);
      return this;
    }

    @Override
    public void end() {
      span.end();
    }
  }
}
