package io.kiln.deploy;

import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.time.Duration;
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
    Resources r = Resources.cpu(cpus != null ? cpus : Runtime.getRuntime().availableProcessors());
    if (gpus != null) {
      if (gpus < 0) {
        throw new CliException("--gpus must be >= 0");
      }
      r = r.withGpu(gpus);
    }
    if (resources != null && !resources.isBlank()) {
      try {
        Map<String, Number> custom = new com.fasterxml.jackson.databind.ObjectMapper().readValue(resources,
            new com.fasterxml.jackson.core.type.TypeReference<Map<String, Number>>() { });
        for (Map.Entry<String, Number> e : custom.entrySet()) {
          r = r.with(e.getKey(), e.getValue().doubleValue());
        }
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new CliException("--resources must be a JSON object of numbers, e.g. '{\"step_a_slot\":4}': "
            + e.getOriginalMessage());
      } catch (IllegalArgumentException e) {
        throw new CliException("--resources: " + e.getMessage());
      }
    }
    try {
      return new NodeOptions(nodeId != null ? nodeId : NodeOptions.randomNodeId(), host, r, labels);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage());
    }
  }

  String token() {
    return token != null ? token : System.getenv("KILN_TOKEN");
  }

  Duration requestTimeout() {
    return Duration.ofMillis(requestTimeoutMs);
  }
}
