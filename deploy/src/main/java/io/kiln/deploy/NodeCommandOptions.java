package io.kiln.deploy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.deploy.node.DrainOptions;
import io.kiln.deploy.node.GpuSampling;
import io.kiln.deploy.node.WarmupOptions;
import io.kiln.engines.pytorch.InstalledLibTorch;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.gpu.GpuDevice;
import io.kiln.runtime.gpu.GpuDiscovery;
import io.kiln.runtime.gpu.GpuDiscoveryException;
import io.kiln.runtime.gpu.GpuInventory;
import io.kiln.runtime.gpu.GpuSampler;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/** Options of the commands that run a node ({@code up}, {@code start}). */
final class NodeCommandOptions {

  @Option(names = "--host", description = "interface to bind and advertise (default ${DEFAULT-VALUE})",
      defaultValue = "127.0.0.1")
  String host;

  @Option(names = "--port", description = "HTTP port: OIP v2, /metrics, /api/v1 (default ${DEFAULT-VALUE})",
      defaultValue = "8000")
  int httpPort;

  @Option(names = "--grpc-port", description = "gRPC port (default ${DEFAULT-VALUE})", defaultValue = "8001")
  int grpcPort;

  @Option(names = "--node-id", description = "node id (default: $KILN_NODE_ID; else $HOSTNAME in a Kubernetes pod or"
      + " with KILN_STABLE_NODE_ID=1; else node-<random>)")
  String nodeId;

  @Option(names = "--gpus", defaultValue = "auto", description = "GPUs this node advertises: auto (default: the"
      + " NVIDIA GPUs nvidia-smi finds, with labels accelerator, gpu_memory_gib, gpu_driver, cuda_version) or a count"
      + " (0 = none; a count on a machine without GPUs declares logical ones, for tests)")
  String gpus;

  @Option(names = "--nvidia-smi", defaultValue = "nvidia-smi", description = "the nvidia-smi that --gpus auto runs"
      + " (default: the one on PATH)")
  String nvidiaSmi;

  @Option(names = "--gpu-sample-period", defaultValue = "10", description = "seconds between samples of the GPUs"
      + " --gpus auto found, for /metrics (default ${DEFAULT-VALUE}, at least 1)")
  int gpuSamplePeriodSeconds = 10;

  @Option(names = "--libtorch", description = "run the PyTorch engine on an installed libtorch instead of the bundled"
      + " CPU natives: its lib folder, e.g. .../site-packages/torch/lib (a CUDA torch for GPU workers; see docs/gpu.md)")
  Path libtorch;

  @Option(names = "--libtorch-version", description = "the --libtorch version, e.g. 2.7.1 (default: read from"
      + " ../version.py or ../build-version)")
  String libtorchVersion;

  @Option(names = "--libtorch-flavor", description = "the --libtorch flavor, cpu or cuNNN (default: from the version,"
      + " e.g. 2.7.1+cu128)")
  String libtorchFlavor;

  @Option(names = "--cpus", description = "CPUs this node advertises (default: the processor count)")
  Double cpus;

  @Option(names = "--resources", description = "custom resources as JSON, e.g. '{\"step_a_slot\":4}'")
  String resources;

  @Option(names = "--labels", split = ",", description = "node labels k=v[,k=v]")
  Map<String, String> labels = new LinkedHashMap<>();

  @Option(names = "--token", description = "require this bearer token on the management API (default: $KILN_TOKEN)")
  String token;

  @Option(names = "--api-key", description = "require this bearer key on the OpenAI API, /v1/* (default: $KILN_API_KEY;"
      + " none: open, like OIP inference)")
  String apiKey;

  @Option(names = "--grpc-max-message-mb", paramLabel = "MiB", defaultValue = "${env:KILN_GRPC_MAX_MESSAGE_MB:-65}",
      description = "the largest gRPC message the gateway accepts, in MiB (RESOURCE_EXHAUSTED beyond); the default"
      + " holds a 64 MiB tensor and the rest of its message (default: $KILN_GRPC_MAX_MESSAGE_MB, else 65)")
  int grpcMaxMessageMb = 65;

  @Option(names = "--request-timeout-ms", description = "default inference deadline (default ${DEFAULT-VALUE})",
      defaultValue = "30000")
  long requestTimeoutMs;

  @Option(names = "--warmup-seconds", description = "before it reports ready, the node warms its serving path with"
      + " HTTP and gRPC requests through its own ports, first to an internal model, then to the deployments of its"
      + " deployment file (--file, --apply) once loaded here, so its first users do not meet a cold JIT; it stops"
      + " once the throughput is flat and the JIT has caught up, at the latest after this long (default: 10 for"
      + " kiln up, which stays quick, 40 for kiln start, so that one busy core gets warm; 0 = off)")
  Double warmupSeconds;

  @Option(names = "--drain-grace", paramLabel = "SECONDS", defaultValue = "${env:KILN_DRAIN_GRACE:-25}",
      description = "on SIGTERM (kiln stop) the node turns not ready, routers elsewhere stop sending to it, and it"
      + " serves what is in flight or queued for at most this long before it closes and leaves; a second signal"
      + " closes at once (default: $KILN_DRAIN_GRACE, else 25; 0 = close at once)")
  double drainGraceSeconds = 25;

  @Option(names = "--strict-readiness", defaultValue = "${env:KILN_STRICT_READINESS:-false}", description = "the node"
      + " reads ready (/v2/health/ready, gRPC ServerReady) only while every deployment serves, as Triton does; by"
      + " default it is ready once up and warmed, whatever its deployments' state, so that one failing or loading"
      + " model does not take it out of a load balancer (each model's own state: /v2/models/{m}/ready)"
      + " (default: $KILN_STRICT_READINESS, else false)")
  boolean strictReadiness;

  @Option(names = "--warmup-requests", defaultValue = "200000", description = "the warm-up ends at the latest after"
      + " this many requests (default ${DEFAULT-VALUE})")
  long warmupRequests = 200_000;

  @Option(names = "--log-format", paramLabel = "text|json", defaultValue = "${env:KILN_LOG_FORMAT:-text}",
      description = "how the node writes its log lines: text (default) or json, one object per line with time, level,"
      + " logger, thread, message, node, and request_id / trace_id on the lines about a request (default:"
      + " $KILN_LOG_FORMAT, else text)")
  String logFormat = "text";

  @Option(names = "--log-level", paramLabel = "LEVEL", defaultValue = "${env:KILN_LOG_LEVEL:-info}",
      description = "level of Kiln's own loggers: error, warn, info (default), debug (adds a line per request and per"
      + " routing retry), trace (default: $KILN_LOG_LEVEL, else info)")
  String logLevel = "info";

  @Option(names = "--otel-endpoint", paramLabel = "URL", defaultValue = "${env:OTEL_EXPORTER_OTLP_ENDPOINT}",
      description = "export spans (kiln.gateway.request, kiln.pool.queue, kiln.worker.batch) with OpenTelemetry over"
      + " OTLP/HTTP to URL (e.g. http://collector:4318; /v1/traces is appended); W3C traceparent headers are continued"
      + " either way (default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none: no spans)")
  String otelEndpoint;

  /** Refuses a bad {@code --log-format} or {@code --log-level}. */
  void checkLogging() {
    try {
      io.kiln.deploy.logging.LogFormat.parse(logFormat);
    } catch (IllegalArgumentException e) {
      throw new CliException("--log-format: " + e.getMessage());
    }
    try {
      io.kiln.deploy.logging.KilnLogging.level(logLevel);
    } catch (IllegalArgumentException e) {
      throw new CliException("--log-level: " + e.getMessage());
    }
  }

  /** Re-configures this process's logging for node {@code nodeId} as {@code --log-format}/{@code --log-level} say. */
  void configureLogging(String nodeId) {
    checkLogging();
    io.kiln.deploy.logging.LogFormat format;
    ch.qos.logback.classic.Level level;
    try {
      format = io.kiln.deploy.logging.LogFormat.parse(logFormat);
    } catch (IllegalArgumentException e) {
      throw new CliException("--log-format: " + e.getMessage());
    }
    try {
      level = io.kiln.deploy.logging.KilnLogging.level(logLevel);
    } catch (IllegalArgumentException e) {
      throw new CliException("--log-level: " + e.getMessage());
    }
    io.kiln.deploy.logging.KilnLogging.configure(format, level, nodeId);
  }

  /** {@code --otel-endpoint}, checked; null for none. */
  String otelEndpoint() {
    if (otelEndpoint == null || otelEndpoint.isBlank()) {
      return null;
    }
    try {
      io.kiln.deploy.tracing.OtelSpans.tracesUrl(otelEndpoint);
    } catch (IllegalArgumentException e) {
      throw new CliException("--otel-endpoint " + e.getMessage());
    }
    return otelEndpoint.strip();
  }

  /**
   * The GPUs a node advertises: how many, the labels describing them, and where that came from.
   *
   * @param found the indices of the GPUs nvidia-smi found; empty for declared ones
   */
  record Gpus(int count, Map<String, String> labels, String description, List<Integer> found) {
  }

  private Gpus gpuChoice;

  NodeOptions node() {
    Map<String, Double> custom = resources == null || resources.isBlank() ? Map.of() : customResources(resources);
    Gpus g = gpus();
    try {
      Resources r = Resources.cpu(cpus != null ? cpus : Runtime.getRuntime().availableProcessors());
      if (g.count() > 0) {
        r = r.withGpu(g.count());
      }
      for (Map.Entry<String, Double> e : custom.entrySet()) {
        r = r.with(e.getKey(), e.getValue());
      }
      // The user's labels win over discovered ones (e.g. to group different cards under one name).
      Map<String, String> all = new LinkedHashMap<>(g.labels());
      all.putAll(labels);
      return new NodeOptions(nodeId != null ? nodeId : NodeIdentity.defaultId(System.getenv()), host, r, all);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage());
    }
  }

  /**
   * Points this process's PyTorch engine at {@code --libtorch}, after checking that a matching JNI library is at
   * hand; null without the flag. Call before the node starts (the engine starts at the first PyTorch load).
   */
  InstalledLibTorch libTorch() {
    if (libtorch == null) {
      if (libtorchVersion != null || libtorchFlavor != null) {
        throw new CliException("--libtorch-version and --libtorch-flavor need --libtorch");
      }
      return null;
    }
    try {
      InstalledLibTorch t = InstalledLibTorch.inspect(libtorch, libtorchVersion, libtorchFlavor);
      t.apply();
      return t;
    } catch (IllegalArgumentException e) {
      throw new CliException("--libtorch: " + e.getMessage());
    }
  }

  /** What {@code --gpus} stands for; {@code auto} runs nvidia-smi once per command. */
  Gpus gpus() {
    if (gpuChoice == null) {
      gpuChoice = chooseGpus();
    }
    return gpuChoice;
  }

  private Gpus chooseGpus() {
    String value = gpus == null ? "auto" : gpus.strip();
    if (value.equalsIgnoreCase("auto")) {
      try {
        GpuInventory found = new GpuDiscovery(nvidiaSmi == null ? "nvidia-smi" : nvidiaSmi,
            GpuDiscovery.DEFAULT_TIMEOUT).discover();
        return new Gpus(found.count(), found.labels(), found.describe(),
            found.devices().stream().map(GpuDevice::index).toList());
      } catch (GpuDiscoveryException | IllegalArgumentException e) {
        throw new CliException("--gpus auto: " + e.getMessage());
      }
    }
    int n;
    try {
      n = Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new CliException("--gpus must be auto or a count >= 0, got '" + gpus + "'");
    }
    if (n < 0) {
      throw new CliException("--gpus must be >= 0, got " + n);
    }
    // Declared, not found: no labels, so node selectors never mistake them for real cards.
    return new Gpus(n, Map.of(), n + " GPU(s) declared with --gpus", List.of());
  }

  /** How to sample the GPUs {@code --gpus auto} found, with the same nvidia-smi; null when none were found. */
  GpuSampling gpuSampling() {
    if (gpuSamplePeriodSeconds < 1) {
      throw new CliException("--gpu-sample-period must be at least 1 second, got " + gpuSamplePeriodSeconds);
    }
    Gpus g = gpus();
    if (g.found().isEmpty()) {
      return null;
    }
    try {
      return new GpuSampling(g.found(), GpuSampler.Options.of(nvidiaSmi == null ? "nvidia-smi" : nvidiaSmi)
          .withPeriod(Duration.ofSeconds(gpuSamplePeriodSeconds)));
    } catch (IllegalArgumentException e) {
      throw new CliException("--nvidia-smi: " + e.getMessage());
    }
  }

  /** {@code {"name": number, ...}}, or a one-line error naming what is wrong. */
  static Map<String, Double> customResources(String json) {
    String example = "--resources must be a JSON object of numbers, e.g. '{\"step_a_slot\":4}'";
    JsonNode tree;
    try {
      tree = new ObjectMapper().readTree(json);
    } catch (JsonProcessingException e) {
      throw new CliException(example + "; " + json + " is not JSON (" + e.getOriginalMessage() + ")");
    }
    if (tree == null || !tree.isObject()) {
      throw new CliException(example + ", got " + json);
    }
    Map<String, Double> out = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = tree.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> f = it.next();
      if (!f.getValue().isNumber()) {
        throw new CliException(example + "; '" + f.getKey() + "' is " + f.getValue());
      }
      out.put(f.getKey(), f.getValue().doubleValue());
    }
    return out;
  }

  @Option(names = "--tls-cert", paramLabel = "PEM", description = "serve HTTPS and gRPC over TLS with this PEM "
      + "certificate chain (default: $KILN_TLS_CERT); a changed file is served to new connections within 10 s")
  Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "PEM", description = "the PEM private key of --tls-cert (default: "
      + "$KILN_TLS_KEY)")
  Path tlsKey;

  /** The gateway's TLS files, checked now (both or neither, readable PEM); null for plain text. */
  io.kiln.gateway.TlsFiles tls() {
    Path cert = tlsCert != null ? tlsCert : envPath("KILN_TLS_CERT");
    Path key = tlsKey != null ? tlsKey : envPath("KILN_TLS_KEY");
    if (cert == null && key == null) {
      return null;
    }
    if (cert == null || key == null) {
      throw new CliException("--tls-cert and --tls-key go together; only " + (cert == null ? "--tls-key" : "--tls-cert")
          + " was given");
    }
    io.kiln.gateway.TlsFiles files = new io.kiln.gateway.TlsFiles(cert.toAbsolutePath(), key.toAbsolutePath());
    try {
      files.read();
    } catch (IllegalArgumentException e) {
      throw new CliException("--tls-cert / --tls-key: " + e.getMessage());
    }
    return files;
  }

  /** The path in environment variable {@code name}, or null when it is unset or blank. */
  static Path envPath(String name) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? null : Path.of(v);
  }

  String apiKey() {
    return apiKey != null ? apiKey : System.getenv("KILN_API_KEY");
  }

  String token() {
    return token != null ? token : System.getenv("KILN_TOKEN");
  }

  Duration requestTimeout() {
    return Duration.ofMillis(requestTimeoutMs);
  }

  /** {@code --warmup-seconds}, or {@code commandDefault} without it. */
  double warmupSeconds(java.time.Duration commandDefault) {
    return warmupSeconds != null ? warmupSeconds : commandDefault.toMillis() / 1e3;
  }

  /** The drain on SIGTERM that {@code --drain-grace} asks for. */
  DrainOptions drain() {
    if (!Double.isFinite(drainGraceSeconds) || drainGraceSeconds < 0 || drainGraceSeconds > 3600) {
      throw new CliException("--drain-grace must be 0..3600 seconds (0 = close at once), got " + drainGraceSeconds);
    }
    return DrainOptions.of(Duration.ofMillis(Math.round(drainGraceSeconds * 1000)));
  }

  /**
   * The start-up warm-up {@code --warmup-seconds} and {@code --warmup-requests} ask for; without
   * {@code --warmup-seconds}, for {@code commandDefault} at most.
   */
  WarmupOptions warmup(java.time.Duration commandDefault) {
    double seconds = warmupSeconds(commandDefault);
    if (!Double.isFinite(seconds) || seconds < 0) {
      throw new CliException("--warmup-seconds must be >= 0 (0 = off), got " + seconds);
    }
    try {
      return WarmupOptions.of(Duration.ofMillis(Math.round(seconds * 1000))).withMaxRequests(warmupRequests);
    } catch (IllegalArgumentException e) {
      throw new CliException("--warmup-seconds / --warmup-requests: " + e.getMessage());
    }
  }
}
