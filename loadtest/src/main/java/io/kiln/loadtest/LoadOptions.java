package io.kiln.loadtest;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What one load test does. Immutable; validated on construction (an invalid combination throws
 * {@link IllegalArgumentException} naming the field). Build with {@link #builder()}.
 *
 * <p>A run is bounded in time and count: it issues requests for {@code warmup + duration} (warm-up
 * results are discarded; in open loop the warm-up ramps the rate up from 10 %), stops early after {@code maxRequests} measured requests, and waits at most
 * {@code requestTimeout} (+ 2 s) for stragglers, which are then counted as {@code unfinished}.
 *
 * @param rate        open loop: arrivals per second (ignored in closed loop)
 * @param connections HTTP/1.1: connection pool size (closed loop: also the number of requests in flight);
 *                    gRPC: HTTP/2 connections, requests multiplexed over them
 * @param maxInFlight open loop: requests outstanding at once before further due requests wait in the
 *                    generator (their wait still counts as latency); bounds memory on a dead server
 * @param targets     every server to send to, {@code target} first: request {@code i} goes to
 *                    {@code targets[i % n]}, each with a pool of {@code connections} (the cluster's gateways, say)
 * @param source      HTTP: makes each request (path, body, headers) in place of {@code model} and {@code mix},
 *                    and the run sends those only (no unrecorded priming request first); null: the mix
 * @param check       HTTP: judges each answer by its body too; null: by status alone, bodies unread. With either
 *                    of the two, or several targets, answers' bodies are read and {@code requestTimeout} bounds a
 *                    request's whole exchange, not only idle time
 */
public record LoadOptions(String name, URI target, Protocol protocol, String model, RequestMix mix, LoadMode mode,
    double rate, int connections, Duration warmup, Duration duration, long maxRequests, Duration requestTimeout,
    int maxInFlight, List<URI> targets, RequestSource source, ResponseCheck check) {

  public static final URI DEFAULT_HTTP_TARGET = URI.create("http://127.0.0.1:8000");
  public static final URI DEFAULT_GRPC_TARGET = URI.create("http://127.0.0.1:8001");
  public static final String DEFAULT_MODEL = "mlp";
  public static final double DEFAULT_RATE = 100;
  public static final int DEFAULT_CONNECTIONS = 16;
  public static final Duration DEFAULT_WARMUP = Duration.ofSeconds(5);
  public static final Duration DEFAULT_DURATION = Duration.ofSeconds(10);
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(10);
  public static final int DEFAULT_MAX_IN_FLIGHT = 4096;
  /** The generated request when none is given: one FP32 {@code [1, 64]} tensor named {@code input}. */
  public static final String DEFAULT_REQUEST = "fp32:1x64";

  private static final Pattern MODEL_NAME = Pattern.compile("[A-Za-z0-9._-]{1,128}");

  public LoadOptions {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(protocol, "protocol");
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(mix, "mix");
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(warmup, "warmup");
    Objects.requireNonNull(duration, "duration");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    targets = targets == null || targets.isEmpty() ? List.of(target) : List.copyOf(targets);
    if (!targets.get(0).equals(target)) {
      throw new IllegalArgumentException("targets must start with target " + target + ", got " + targets);
    }
    for (URI t : targets) {
      if (!"http".equalsIgnoreCase(t.getScheme()) || t.getHost() == null) {
        throw new IllegalArgumentException("target must be http://HOST[:PORT] (TLS is not supported), got " + t);
      }
    }
    if ((source != null || check != null || targets.size() > 1) && protocol == Protocol.GRPC) {
      throw new IllegalArgumentException("source, check and several targets are for HTTP; protocol is "
          + protocol.cliName());
    }
    if (!MODEL_NAME.matcher(model).matches()) {
      throw new IllegalArgumentException("model name must match " + MODEL_NAME + ", got '" + model + "'");
    }
    if (mode == LoadMode.OPEN && (!(rate > 0) || rate > 10_000_000)) {
      throw new IllegalArgumentException("open loop needs 0 < rate <= 1e7 requests/s, got " + rate);
    }
    if (connections < 1 || connections > 10_000) {
      throw new IllegalArgumentException("connections must be 1..10000, got " + connections);
    }
    if (warmup.isNegative() || duration.isNegative() || duration.isZero() || requestTimeout.isNegative() || requestTimeout.isZero()) {
      throw new IllegalArgumentException("warmup must be >= 0, duration and requestTimeout > 0");
    }
    if (maxRequests < 1) {
      throw new IllegalArgumentException("maxRequests must be >= 1, got " + maxRequests);
    }
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be >= 1, got " + maxInFlight);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder().name(name).target(target).protocol(protocol).model(model).mix(mix).mode(mode).rate(rate)
        .connections(connections).warmup(warmup).duration(duration).maxRequests(maxRequests)
        .requestTimeout(requestTimeout).maxInFlight(maxInFlight).targets(targets).source(source).check(check);
  }

  /** The same test in open loop at another rate (the max-throughput search uses this). */
  public LoadOptions atRate(double newRate, String newName) {
    return toBuilder().mode(LoadMode.OPEN).rate(newRate).name(newName).build();
  }

  /** The port to connect to: the URI's, else 80. */
  public int port() {
    return port(target);
  }

  /** {@code uri}'s port, else 80. */
  public static int port(URI uri) {
    return uri.getPort() > 0 ? uri.getPort() : 80;
  }

  /** The configuration as plain values for the JSON summary and reports. */
  public Map<String, Object> describe() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", name);
    m.put("target", target.toString());
    if (targets.size() > 1) {
      m.put("targets", targets.stream().map(URI::toString).toList());
    }
    m.put("protocol", protocol.cliName());
    m.put("model", model);
    m.put("mode", mode.name().toLowerCase(java.util.Locale.ROOT));
    if (mode == LoadMode.OPEN) {
      m.put("rate", rate);
      m.put("maxInFlight", maxInFlight);
    }
    m.put("connections", connections);
    m.put("warmupMs", warmup.toMillis());
    m.put("durationMs", duration.toMillis());
    m.put("maxRequests", maxRequests == Long.MAX_VALUE ? null : maxRequests);
    m.put("requestTimeoutMs", requestTimeout.toMillis());
    List<Map<String, Object>> requests = new ArrayList<>();
    for (RequestMix.Entry e : mix.entries()) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("label", e.template().label());
      r.put("weight", e.weight());
      r.put("jsonBytes", e.template().jsonSize());
      requests.add(r);
    }
    if (source instanceof LlmWorkload w) {
      m.put("llm", w.describe());
    }
    m.put("requests", source != null ? "made per request" : requests);
    if (check != null) {
      m.put("check", "answers judged by body");
    }
    return m;
  }

  /** Mutable builder; {@link #build()} validates. Defaults are the {@code DEFAULT_*} constants. */
  public static final class Builder {
    private String name = "run";
    private URI target;
    private Protocol protocol = Protocol.HTTP_JSON;
    private String model = DEFAULT_MODEL;
    private RequestMix mix;
    private LoadMode mode = LoadMode.CLOSED;
    private double rate = DEFAULT_RATE;
    private int connections = DEFAULT_CONNECTIONS;
    private Duration warmup = DEFAULT_WARMUP;
    private Duration duration = DEFAULT_DURATION;
    private long maxRequests = Long.MAX_VALUE;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private int maxInFlight = DEFAULT_MAX_IN_FLIGHT;
    private List<URI> targets;
    private RequestSource source;
    private ResponseCheck check;

    private Builder() {
    }

    /** Every server to send to, round robin; the first is also {@link #target(URI)}. */
    public Builder targets(List<URI> v) {
      targets = v == null ? null : List.copyOf(v);
      if (targets != null && !targets.isEmpty()) {
        target = targets.get(0);
      }
      return this;
    }

    public Builder source(RequestSource v) {
      source = v;
      return this;
    }

    public Builder check(ResponseCheck v) {
      check = v;
      return this;
    }

    public Builder name(String v) {
      name = v;
      return this;
    }

    /** Default: {@link #DEFAULT_HTTP_TARGET}, or {@link #DEFAULT_GRPC_TARGET} for gRPC. */
    public Builder target(URI v) {
      target = v;
      targets = null; // one target, unless targets(...) follows
      return this;
    }

    public Builder target(String v) {
      return target(URI.create(v));
    }

    public Builder protocol(Protocol v) {
      protocol = v;
      return this;
    }

    public Builder model(String v) {
      model = v;
      return this;
    }

    /** Default: {@link #DEFAULT_REQUEST}. */
    public Builder mix(RequestMix v) {
      mix = v;
      return this;
    }

    public Builder request(RequestTemplate v) {
      return mix(RequestMix.single(v));
    }

    public Builder mode(LoadMode v) {
      mode = v;
      return this;
    }

    public Builder rate(double v) {
      rate = v;
      return this;
    }

    public Builder connections(int v) {
      connections = v;
      return this;
    }

    public Builder warmup(Duration v) {
      warmup = v;
      return this;
    }

    public Builder duration(Duration v) {
      duration = v;
      return this;
    }

    public Builder maxRequests(long v) {
      maxRequests = v;
      return this;
    }

    public Builder requestTimeout(Duration v) {
      requestTimeout = v;
      return this;
    }

    public Builder maxInFlight(int v) {
      maxInFlight = v;
      return this;
    }

    public LoadOptions build() {
      URI t = target != null ? target : protocol == Protocol.GRPC ? DEFAULT_GRPC_TARGET : DEFAULT_HTTP_TARGET;
      RequestMix m = mix != null ? mix
          : RequestMix.single(RequestTemplate.generatedFp32(RequestMix.DEFAULT_INPUT_NAME, new long[] {1, 64}, 42));
      return new LoadOptions(name, t, protocol, model, m, mode, rate, connections, warmup, duration, maxRequests,
          requestTimeout, maxInFlight, targets, source, check); // no targets: [target]
    }
  }
}
