package io.kiln.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The canonical deployments tests apply, as deployment-file YAML: a {@code builtin:identity} model (answers its
 * inputs; no files, no engine to load) with one input and one output of the same type and shape, and the pool,
 * batching and queue settings a test chooses. {@link #yaml()} is one entry of a {@code deployments:} list;
 * {@link #file} makes the whole file.
 *
 * <pre>{@code
 * Deployment.file(Deployment.identity("echo").workersPerNode(1).cpu(0.5).batching(8, 1));
 * }</pre>
 *
 * <p>Immutable: each method returns a new deployment.
 */
public final class Deployment {

  private final String name;
  private final String version;
  private final String input;
  private final String output;
  private final String datatype;
  private final long[] shape;
  private final String pool;
  private final String batching;
  private final String queue;
  private final List<String> extra;

  private Deployment(String name, String version, String input, String output, String datatype, long[] shape,
                     String pool, String batching, String queue, List<String> extra) {
    this.name = name;
    this.version = version;
    this.input = input;
    this.output = output;
    this.datatype = datatype;
    this.shape = shape;
    this.pool = pool;
    this.batching = batching;
    this.queue = queue;
    this.extra = List.copyOf(extra);
  }

  /**
   * An identity deployment {@code name}, version 1, input {@code x} and output {@code y} FP32 {@code [-1, 2]}, one
   * worker per node holding half a CPU, Kiln's default batching and queue.
   */
  public static Deployment identity(String name) {
    return new Deployment(name, "1", "x", "y", "FP32", new long[] {-1, 2}, "{workers_per_node: 1, worker_resources: "
        + "{CPU: 0.5}}", null, null, List.of());
  }

  public Deployment version(String v) {
    return new Deployment(name, v, input, output, datatype, shape, pool, batching, queue, extra);
  }

  /** The one input's and output's names, datatype and shape. */
  public Deployment tensors(String in, String out, String type, long... dims) {
    return new Deployment(name, version, in, out, type, dims.clone(), pool, batching, queue, extra);
  }

  /** {@code pool:} as given, a YAML flow mapping, e.g. {@code {workers_per_node: 2}}. */
  public Deployment pool(String flow) {
    return new Deployment(name, version, input, output, datatype, shape, flow, batching, queue, extra);
  }

  /** {@code pool: {workers_per_node: n, worker_resources: {CPU: cpu}}}. */
  public Deployment workers(int perNode, double cpu) {
    return pool("{workers_per_node: " + perNode + ", worker_resources: {CPU: " + number(cpu) + "}}");
  }

  public Deployment batching(int maxBatchSize, int maxBatchDelayMs) {
    return new Deployment(name, version, input, output, datatype, shape, pool,
        "{max_batch_size: " + maxBatchSize + ", max_batch_delay_ms: " + maxBatchDelayMs + "}", queue, extra);
  }

  public Deployment queue(int maxQueued, int timeoutMs) {
    return new Deployment(name, version, input, output, datatype, shape, pool, batching,
        "{max_queued: " + maxQueued + ", timeout_ms: " + timeoutMs + "}", extra);
  }

  /** A further top-level line of the entry, e.g. {@code autoscaling: {min_workers: 1, max_workers: 2}}. */
  public Deployment with(String line) {
    List<String> more = new ArrayList<>(extra);
    more.add(line);
    return new Deployment(name, version, input, output, datatype, shape, pool, batching, queue, more);
  }

  public String name() {
    return name;
  }

  /** This deployment as one entry of a {@code deployments:} list, indented by two spaces. */
  public String yaml() {
    String dims = java.util.Arrays.stream(shape).mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"));
    StringBuilder b = new StringBuilder()
        .append("  - name: ").append(name).append('\n')
        .append("    version: \"").append(version).append("\"\n")
        .append("    model:\n")
        .append("      uri: builtin:identity\n")
        .append("      engine: Builtin\n")
        .append("      inputs:  [{name: ").append(input).append(", datatype: ").append(datatype).append(", shape: ")
        .append(dims).append("}]\n")
        .append("      outputs: [{name: ").append(output).append(", datatype: ").append(datatype).append(", shape: ")
        .append(dims).append("}]\n")
        .append("    pool: ").append(pool).append('\n');
    if (batching != null) {
      b.append("    batching: ").append(batching).append('\n');
    }
    if (queue != null) {
      b.append("    queue: ").append(queue).append('\n');
    }
    extra.forEach(l -> b.append("    ").append(l).append('\n'));
    return b.toString();
  }

  /** A deployment file declaring {@code deployments}. */
  public static String file(Deployment... deployments) {
    StringBuilder b = new StringBuilder("deployments:\n");
    for (Deployment d : deployments) {
      b.append(d.yaml());
    }
    return b.toString();
  }

  private static String number(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%s", v);
  }
}
