package io.kiln.gateway;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link KilnGateway} listens and what it admits. Immutable; build with {@link #builder()}, which
 * validates each setting as it is set.
 *
 * @param host the interface both servers bind to (explicit; default loopback)
 * @param httpPort the OIP HTTP/REST port; 0 picks a free port
 * @param grpcPort the OIP gRPC port, a separate server; 0 picks a free port
 * @param maxBodyBytes the largest HTTP body or gRPC message accepted (413 / RESOURCE_EXHAUSTED beyond)
 * @param defaultTimeout the deadline of every inference request; a request may shorten it, never extend it
 * @param retryAfterSeconds the {@code Retry-After} sent with 503 when the pool does not suggest one
 * @param serverVersion the version reported by server metadata
 * @param registry where the gateway registers its meters and what {@code /metrics} exposes; pass the
 *     node's registry so pool meters appear too, or {@code null} for a registry of the gateway's own
 * @param bindJvmMetrics whether to register JVM meters (memory, GC, threads, classes, CPU, uptime)
 * @param requestReadTimeout how long a client has to send a whole request (headers and body), counted from
 *     when its connection opened or its previous answer was sent; a connection that takes longer is closed
 *     (slow-client defence: a trickle of bytes never holds a connection for good)
 * @param idleTimeout a connection on which no byte moves either way this long is closed; never shorter in
 *     effect than {@code defaultTimeout} plus 10 s, so a connection waiting for its answer is not cut
 * @param httpEventLoops event loops serving the REST port (servers sharing it, connections round-robined);
 *     default one per core, at most {@value #MAX_DEFAULT_HTTP_EVENT_LOOPS}
 * @param tls the certificate and key both servers present (HTTPS; gRPC over TLS with ALPN h2), reloaded when
 *     the files change; {@code null} for plain HTTP and h2c
 * @param strictReadiness how {@code /v2/health/ready} and gRPC ServerReady read once the server is up and no
 *     readiness hold is in place: {@code false} (default) ready, whatever the models' state (a failing or
 *     loading model is reported by its own {@code /v2/models/{m}/ready}, and does not take the node out of a
 *     load balancer); {@code true} ready only while every model the directory lists is ready (Triton's rule)
 * @param apiKey the key the OpenAI API ({@code /v1/*}) requires as {@code Authorization: Bearer <key>}, or
 *     {@code null} (the default) for none: those routes are then open, as the OIP inference routes are. Only the
 *     {@code /v1/*} routes check it; {@link #toString()} never shows it
 * @param managementToken the bearer token the gateway's own management calls require (the system shared-memory
 *     extension's register, unregister and status, over HTTP and gRPC), or {@code null} (the default) for none; the
 *     node passes its management token ({@code --token}). {@link #toString()} never shows it
 * @param grpcMaxMessageBytes the largest gRPC message accepted (RESOURCE_EXHAUSTED beyond); default
 *     {@value #DEFAULT_GRPC_MAX_MESSAGE_BYTES}, room for a 64 MiB tensor and its message
 */
public record GatewayOptions(String host, int httpPort, int grpcPort, long maxBodyBytes, Duration defaultTimeout,
                             int retryAfterSeconds, String serverVersion, PrometheusMeterRegistry registry,
                             boolean bindJvmMetrics, Duration requestReadTimeout, Duration idleTimeout,
                             int httpEventLoops, TlsFiles tls, boolean strictReadiness, String apiKey,
                             String managementToken, long grpcMaxMessageBytes) {

  public static final String DEFAULT_HOST = "127.0.0.1";
  public static final int DEFAULT_HTTP_PORT = 8000;
  public static final int DEFAULT_GRPC_PORT = 8001;
  public static final long DEFAULT_MAX_BODY_BYTES = 64L * 1024 * 1024;
  /** A 64 MiB tensor and the rest of its message (names, shape, parameters) with room to spare. */
  public static final long DEFAULT_GRPC_MAX_MESSAGE_BYTES = 65L * 1024 * 1024;
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
  public static final int DEFAULT_RETRY_AFTER_SECONDS = 1;
  public static final String DEFAULT_SERVER_VERSION = "0.1.0";
  public static final Duration DEFAULT_REQUEST_READ_TIMEOUT = Duration.ofSeconds(30);
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(120);
  /** The default number of REST event loops never exceeds this, however many cores the machine has. */
  public static final int MAX_DEFAULT_HTTP_EVENT_LOOPS = 4;
  /** The most REST event loops one gateway may be given. */
  public static final int MAX_HTTP_EVENT_LOOPS = 64;

  /** The largest body accepted: one byte under 2 GiB, the most a Vert.x buffer holds. */
  public static final long MAX_BODY_BYTES_LIMIT = Integer.MAX_VALUE - 1;

  public GatewayOptions {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(defaultTimeout, "defaultTimeout");
    Objects.requireNonNull(serverVersion, "serverVersion");
    checkPort("httpPort", httpPort);
    checkPort("grpcPort", grpcPort);
    if (httpPort != 0 && httpPort == grpcPort) {
      throw new IllegalArgumentException("httpPort and grpcPort must differ, both are " + httpPort);
    }
    if (maxBodyBytes < 1 || maxBodyBytes > MAX_BODY_BYTES_LIMIT) {
      throw new IllegalArgumentException("maxBodyBytes must be in [1, " + MAX_BODY_BYTES_LIMIT + "], got " + maxBodyBytes);
    }
    if (defaultTimeout.isNegative() || defaultTimeout.isZero() || defaultTimeout.toMillis() < 1) {
      throw new IllegalArgumentException("defaultTimeout must be at least 1 ms, got " + defaultTimeout);
    }
    if (retryAfterSeconds < 0) {
      throw new IllegalArgumentException("retryAfterSeconds must be >= 0, got " + retryAfterSeconds);
    }
    checkTimeout("requestReadTimeout", requestReadTimeout);
    checkTimeout("idleTimeout", idleTimeout);
    checkEventLoops(httpEventLoops);
    checkApiKey(apiKey);
    managementToken = managementToken == null || managementToken.isEmpty() ? null : managementToken;
    checkGrpcMax(grpcMaxMessageBytes);
  }

  private static void checkGrpcMax(long value) {
    if (value < 1024 || value > MAX_BODY_BYTES_LIMIT) {
      throw new IllegalArgumentException("grpcMaxMessageBytes must be in [1024, " + MAX_BODY_BYTES_LIMIT + "], got "
          + value);
    }
  }

  private static void checkApiKey(String key) {
    if (key != null && (key.isEmpty() || !key.chars().allMatch(c -> c > 0x20 && c < 0x7f))) {
      throw new IllegalArgumentException("apiKey must be printable ASCII without spaces (or null for none)");
    }
  }

  /** The options, the API key hidden: options are logged, keys must not be. */
  @Override
  public String toString() {
    return "GatewayOptions[host=" + host + ", httpPort=" + httpPort + ", grpcPort=" + grpcPort + ", maxBodyBytes="
        + maxBodyBytes + ", defaultTimeout=" + defaultTimeout + ", retryAfterSeconds=" + retryAfterSeconds
        + ", serverVersion=" + serverVersion + ", registry=" + registry + ", bindJvmMetrics=" + bindJvmMetrics
        + ", requestReadTimeout=" + requestReadTimeout + ", idleTimeout=" + idleTimeout + ", httpEventLoops="
        + httpEventLoops + ", tls=" + tls + ", strictReadiness=" + strictReadiness + ", apiKey="
        + (apiKey == null ? "none" : "(set)") + ", managementToken=" + (managementToken == null ? "none" : "(set)")
        + ", grpcMaxMessageBytes=" + grpcMaxMessageBytes + "]";
  }

  /** One REST event loop per core, at most {@value #MAX_DEFAULT_HTTP_EVENT_LOOPS}. */
  public static int defaultHttpEventLoops() {
    return Math.max(1, Math.min(MAX_DEFAULT_HTTP_EVENT_LOOPS, Runtime.getRuntime().availableProcessors()));
  }

  private static void checkEventLoops(int n) {
    if (n < 1 || n > MAX_HTTP_EVENT_LOOPS) {
      throw new IllegalArgumentException("httpEventLoops must be in [1, " + MAX_HTTP_EVENT_LOOPS + "], got " + n);
    }
  }

  /** The idle timeout in force: {@link #idleTimeout()}, raised to the deadline plus 10 s if shorter. */
  public Duration effectiveIdleTimeout() {
    Duration floor = defaultTimeout.plusSeconds(10);
    return idleTimeout.compareTo(floor) < 0 ? floor : idleTimeout;
  }

  private static void checkTimeout(String what, Duration d) {
    if (d == null || d.toMillis() < 1) {
      throw new IllegalArgumentException(what + " must be at least 1 ms, got " + d);
    }
  }

  public static GatewayOptions defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from these options. */
  public Builder toBuilder() {
    return new Builder().host(host).httpPort(httpPort).grpcPort(grpcPort).maxBodyBytes(maxBodyBytes)
        .defaultTimeout(defaultTimeout).retryAfterSeconds(retryAfterSeconds).serverVersion(serverVersion)
        .registry(registry).bindJvmMetrics(bindJvmMetrics).requestReadTimeout(requestReadTimeout)
        .idleTimeout(idleTimeout).httpEventLoops(httpEventLoops).tls(tls).strictReadiness(strictReadiness)
        .apiKey(apiKey).managementToken(managementToken).grpcMaxMessageBytes(grpcMaxMessageBytes);
  }

  private static void checkPort(String what, int port) {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException(what + " must be in [0, 65535], got " + port);
    }
  }

  /** Validating builder; each setter throws {@link IllegalArgumentException} on a bad value. */
  public static final class Builder {
    private String host = DEFAULT_HOST;
    private int httpPort = DEFAULT_HTTP_PORT;
    private int grpcPort = DEFAULT_GRPC_PORT;
    private long maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private Duration defaultTimeout = DEFAULT_TIMEOUT;
    private int retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS;
    private String serverVersion = DEFAULT_SERVER_VERSION;
    private PrometheusMeterRegistry registry;
    private boolean bindJvmMetrics = true;
    private Duration requestReadTimeout = DEFAULT_REQUEST_READ_TIMEOUT;
    private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
    private int httpEventLoops = defaultHttpEventLoops();
    private TlsFiles tls;
    private boolean strictReadiness;
    private String apiKey;
    private String managementToken;
    private long grpcMaxMessageBytes = DEFAULT_GRPC_MAX_MESSAGE_BYTES;

    private Builder() {
    }

    /** See {@link GatewayOptions#managementToken()}: {@code null} or empty for none. */
    public Builder managementToken(String value) {
      managementToken = value == null || value.isEmpty() ? null : value;
      return this;
    }

    /**
     * See {@link GatewayOptions#grpcMaxMessageBytes()}.
     *
     * @throws IllegalArgumentException outside [1024, {@value #MAX_BODY_BYTES_LIMIT}]
     */
    public Builder grpcMaxMessageBytes(long value) {
      checkGrpcMax(value);
      grpcMaxMessageBytes = value;
      return this;
    }

    /**
     * See {@link GatewayOptions#apiKey()}: {@code null} or empty for none.
     *
     * @throws IllegalArgumentException if the key is blank or holds spaces or non-printable characters
     */
    public Builder apiKey(String value) {
      String key = value == null || value.isEmpty() ? null : value;
      checkApiKey(key);
      apiKey = key;
      return this;
    }

    /** See {@link GatewayOptions#strictReadiness()}. */
    public Builder strictReadiness(boolean value) {
      strictReadiness = value;
      return this;
    }

    public Builder host(String value) {
      if (value == null || value.isBlank()) {
        throw new IllegalArgumentException("host must be an explicit interface address, got '" + value + "'");
      }
      host = value;
      return this;
    }

    public Builder httpPort(int value) {
      checkPort("httpPort", value);
      httpPort = value;
      return this;
    }

    public Builder grpcPort(int value) {
      checkPort("grpcPort", value);
      grpcPort = value;
      return this;
    }

    public Builder maxBodyBytes(long value) {
      if (value < 1 || value > MAX_BODY_BYTES_LIMIT) {
        throw new IllegalArgumentException("maxBodyBytes must be in [1, " + MAX_BODY_BYTES_LIMIT + "], got " + value);
      }
      maxBodyBytes = value;
      return this;
    }

    public Builder defaultTimeout(Duration value) {
      if (value == null || value.toMillis() < 1) {
        throw new IllegalArgumentException("defaultTimeout must be at least 1 ms, got " + value);
      }
      defaultTimeout = value;
      return this;
    }

    public Builder retryAfterSeconds(int value) {
      if (value < 0) {
        throw new IllegalArgumentException("retryAfterSeconds must be >= 0, got " + value);
      }
      retryAfterSeconds = value;
      return this;
    }

    public Builder serverVersion(String value) {
      serverVersion = Objects.requireNonNull(value, "serverVersion");
      return this;
    }

    /** The registry to use and expose; {@code null} for one of the gateway's own. */
    public Builder registry(PrometheusMeterRegistry value) {
      registry = value;
      return this;
    }

    public Builder bindJvmMetrics(boolean value) {
      bindJvmMetrics = value;
      return this;
    }

    public Builder requestReadTimeout(Duration value) {
      checkTimeout("requestReadTimeout", value);
      requestReadTimeout = value;
      return this;
    }

    public Builder idleTimeout(Duration value) {
      checkTimeout("idleTimeout", value);
      idleTimeout = value;
      return this;
    }

    public Builder httpEventLoops(int value) {
      checkEventLoops(value);
      httpEventLoops = value;
      return this;
    }

    /** Serve TLS with these files; {@code null} (the default) for plain text. */
    public Builder tls(TlsFiles value) {
      tls = value;
      return this;
    }

    public GatewayOptions build() {
      return new GatewayOptions(host, httpPort, grpcPort, maxBodyBytes, defaultTimeout, retryAfterSeconds,
          serverVersion, registry, bindJvmMetrics, requestReadTimeout, idleTimeout, httpEventLoops, tls,
          strictReadiness, apiKey, managementToken, grpcMaxMessageBytes);
    }
  }
}
