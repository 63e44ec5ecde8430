package io.kiln.deploy;

import io.kiln.deploy.node.GpuSampling;
import io.kiln.deploy.node.ServingNode;
import io.kiln.deploy.node.WarmupOptions;
import io.kiln.deploy.node.WarmupReport;
import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.serve.ServeController;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Kiln node in this process: the runtime (single-node or clustered) and, on it, the
 * {@link ServingNode} (pools' load board and client, serve controller, gateway with {@code /metrics} and the
 * management API), which warms its serving path before it reports ready when the options say so. Start it from a main thread; {@link #close} blocks until the node left its cluster.
 */
public final class KilnNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(KilnNode.class);

  /**
   * How to start a node.
   *
   * @param cluster null for a single-node, in-process cluster ({@code kiln up})
   * @param token management token, or null for none
   * @param gpuSampling null for a node without GPUs found by {@code nvidia-smi} (no GPU meters)
   * @param warmup how the node warms its serving path before it reports ready ({@code --warmup-seconds})
   * @param tls the gateway's certificate and key ({@code --tls-cert}, {@code --tls-key}), or null for plain text
   * @param otelEndpoint the OTLP/HTTP endpoint the node exports its spans to ({@code --otel-endpoint}), or null for
   *     none: then no OpenTelemetry SDK is started
   * @param strictReadiness {@code --strict-readiness}: the node reads ready only while every deployment serves
   *     (see {@link GatewayOptions#strictReadiness()}); by default it is ready once up and warmed, whatever its
   *     deployments' state
   * @param apiKey {@code --api-key}: the bearer key the OpenAI API ({@code /v1/*}) requires, or null for none
   * @param grpcMaxMessageMb {@code --grpc-max-message-mb}: the largest gRPC message the gateway accepts, in MiB
   */
  public record Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                        Duration requestTimeout, GpuSampling gpuSampling, WarmupOptions warmup,
                        io.kiln.gateway.TlsFiles tls, String otelEndpoint, boolean strictReadiness, String apiKey,
                        int grpcMaxMessageMb) {

    /** What {@code --grpc-max-message-mb} is by default. */
    public static final int DEFAULT_GRPC_MAX_MESSAGE_MB =
        (int) (GatewayOptions.DEFAULT_GRPC_MAX_MESSAGE_BYTES / (1024 * 1024));

    /** With the default gRPC message limit. */
    public Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                   Duration requestTimeout, GpuSampling gpuSampling, WarmupOptions warmup,
                   io.kiln.gateway.TlsFiles tls, String otelEndpoint, boolean strictReadiness, String apiKey) {
      this(node, cluster, httpPort, grpcPort, token, requestTimeout, gpuSampling, warmup, tls, otelEndpoint,
          strictReadiness, apiKey, DEFAULT_GRPC_MAX_MESSAGE_MB);
    }

    public Options {
      warmup = warmup == null ? WarmupOptions.OFF : warmup;
      otelEndpoint = otelEndpoint == null || otelEndpoint.isBlank() ? null : otelEndpoint.strip();
      apiKey = apiKey == null || apiKey.isBlank() ? null : apiKey;
    }

    /** Without an OpenAI API key. */
    public Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                   Duration requestTimeout, GpuSampling gpuSampling, WarmupOptions warmup,
                   io.kiln.gateway.TlsFiles tls, String otelEndpoint, boolean strictReadiness) {
      this(node, cluster, httpPort, grpcPort, token, requestTimeout, gpuSampling, warmup, tls, otelEndpoint,
          strictReadiness, null);
    }

    /** With the default (lenient) readiness. */
    public Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                   Duration requestTimeout, GpuSampling gpuSampling, WarmupOptions warmup,
                   io.kiln.gateway.TlsFiles tls, String otelEndpoint) {
      this(node, cluster, httpPort, grpcPort, token, requestTimeout, gpuSampling, warmup, tls, otelEndpoint, false);
    }

    /** Plain text, without span export. */
    public Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                   Duration requestTimeout, GpuSampling gpuSampling, WarmupOptions warmup) {
      this(node, cluster, httpPort, grpcPort, token, requestTimeout, gpuSampling, warmup, null, null);
    }

  /** Without a warm-up. */
    public Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                   Duration requestTimeout, GpuSampling gpuSampling) {
      this(node, cluster, httpPort, grpcPort, token, requestTimeout, gpuSampling, WarmupOptions.OFF);
    }

    /** Without GPU sampling or a warm-up. */
    public Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                   Duration requestTimeout) {
      this(node, cluster, httpPort, grpcPort, token, requestTimeout, null);
    }
  }

  private final KilnRuntime runtime;
  private final ServingNode serving;

  private final io.kiln.deploy.tracing.OtelSpans spans; // null without span export

  private KilnNode(KilnRuntime runtime, ServingNode serving, io.kiln.deploy.tracing.OtelSpans spans) {
    this.runtime = runtime;
    this.serving = serving;
    this.spans = spans;
  }

  /**
   * Starts the runtime, then the serving parts. (A node given members to join that finds itself alone fails
   * in {@link KilnCluster#join}, rather than serve as a cluster of its own.)
   */
  public static CompletionStage<KilnNode> start(Options o) {
    GatewayOptions gateway;
    try {
      if (o.grpcMaxMessageMb() < 1 || o.grpcMaxMessageMb() > 2047) {
        throw new IllegalArgumentException("--grpc-max-message-mb must be in [1, 2047], got " + o.grpcMaxMessageMb());
      }
      gateway = GatewayOptions.builder().host(o.node().host()).httpPort(o.httpPort()).grpcPort(o.grpcPort())
          .defaultTimeout(o.requestTimeout()).tls(o.tls()).strictReadiness(o.strictReadiness()).apiKey(o.apiKey())
          .managementToken(o.token()).grpcMaxMessageBytes(o.grpcMaxMessageMb() * 1024L * 1024).build();
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(e);
    }
    // Before the runtime starts: a refused setting must not leave a joined runtime behind.
    io.kiln.deploy.tracing.OtelEnvironment otelEnv = null;
    if (o.otelEndpoint() != null) {
      try {
        io.kiln.deploy.tracing.OtelSpans.tracesUrl(o.otelEndpoint());
      } catch (IllegalArgumentException e) {
        return CompletableFuture.failedFuture(new IllegalArgumentException("--otel-endpoint " + e.getMessage()));
      }
      try {
        otelEnv = io.kiln.deploy.tracing.OtelEnvironment.from(System.getenv());
      } catch (IllegalArgumentException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    CompletionStage<KilnRuntime> rt = o.cluster() == null ? LocalCluster.singleNode(o.node())
        : KilnCluster.join(o.node(), o.cluster());
    io.kiln.deploy.tracing.OtelEnvironment otel = otelEnv;
    return rt.thenCompose(runtime -> {
      io.kiln.deploy.tracing.OtelSpans spans = null;
      if (o.otelEndpoint() != null) {
        spans = io.kiln.deploy.tracing.OtelSpans.start(o.otelEndpoint(), runtime.nodeId(), otel);
        runtime.registerLocalService(io.kiln.pools.trace.Spans.class, spans);
        LOG.info("node {} exports spans to {}", runtime.nodeId(), spans.endpoint());
      }
      io.kiln.deploy.tracing.OtelSpans exporter = spans;
      return ServingNode.start(runtime, gateway, o.token(), java.nio.file.Path.of(System.getProperty("kiln.home", ".")),
              o.gpuSampling(), o.warmup())
          .thenApply(serving -> {
            LOG.info("node {} serving: HTTP {}:{} gRPC {}:{}", runtime.nodeId(), o.node().host(), serving.httpPort(),
                o.node().host(), serving.grpcPort());
            return new KilnNode(runtime, serving, exporter);
          })
          .exceptionallyCompose(err -> runtime.shutdown().handle((v, e) -> {
            if (exporter != null) {
              exporter.close();
            }
            return null;
          }).thenCompose(v -> CompletableFuture.<KilnNode>failedFuture(err)));
    });
  }

  public KilnRuntime runtime() {
    return runtime;
  }

  public ServeController serve() {
    return serving.serve();
  }

  public io.kiln.pipelines.Pipelines pipelines() {
    return serving.pipelines();
  }

  public int httpPort() {
    return serving.httpPort();
  }

  public int grpcPort() {
    return serving.grpcPort();
  }

  /** Completes once the start-up warm-up is over and the node reports ready (see {@link ServingNode#warmup()}). */
  public CompletionStage<WarmupReport> warmup() {
    return serving.warmup();
  }

  /**
   * Drains the node (see {@link ServingNode#drain}): blocks until it is idle or the grace is over, then returns
   * how it went; {@link #close} follows. Never throws.
   */
  public io.kiln.deploy.node.DrainReport drain(io.kiln.deploy.node.DrainOptions options) {
    return serving.drain(options).toCompletableFuture().join();
  }

  /** Ends a {@link #drain} in progress at its next look. */
  public void cutDrainShort() {
    serving.cutDrainShort();
  }

  /** Stops the gateway and the controller, then the runtime (whose actors die and whose names are freed). */
  @Override
  public void close() {
    serving.close();
    runtime.close();
    if (spans != null) {
      spans.close(); // last: the spans of what the drain still served go out
    }
  }
}
