package io.kiln.deploy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
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

  @Option(names = "--node-id", description = "node id (default: node-<random>)")
  String nodeId;

  @Option(names = "--gpus", description = "logical GPUs this node advertises (default 0)")
  Integer gpus;

  @Option(names = "--cpus", description = "CPUs this node advertises (default: the processor count)")
  Double cpus;

  @Option(names = "--resources", description = "custom resources as JSON, e.g. '{\"step_a_slot\":4}'")
  String resources;

  @Option(names = "--labels", split = ",", description = "node labels k=v[,k=v]")
  Map<String, String> labels = new LinkedHashMap<>();

  @Option(names = "--token", description = "require this bearer token on the management API (default: $KILN_TOKEN)")
  String token;

  @Option(names = "--request-timeout-ms", description = "default inference deadline (default ${DEFAULT-VALUE})",
      defaultValue = "30000")
  long requestTimeoutMs;

  NodeOptions node() {
    if (gpus != null && gpus < 0) {
      throw new CliException("--gpus must be >= 0, got " + gpus);
    }
    Map<String, Double> custom = resources == null || resources.isBlank() ? Map.of() : customResources(resources);
    try {
      Resources r = Resources.cpu(cpus != null ? cpus : Runtime.getRuntime().availableProcessors());
      if (gpus != null) {
        r = r.withGpu(gpus);
      }
      for (Map.Entry<String, Double> e : custom.entrySet()) {
        r = r.with(e.getKey(), e.getValue());
      }
      return new NodeOptions(nodeId != null ? nodeId : NodeOptions.randomNodeId(), host, r, labels);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage());
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

  String token() {
    return token != null ? token : System.getenv("KILN_TOKEN");
  }

  Duration requestTimeout() {
    return Duration.ofMillis(requestTimeoutMs);
  }
}
