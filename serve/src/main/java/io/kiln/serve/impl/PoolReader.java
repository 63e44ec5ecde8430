package io.kiln.serve.impl;

import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.ResourcesSection;
import io.kiln.runtime.Resources;
import io.kiln.serve.AutoscalingSpec;
import io.kiln.serve.PoolPlacement;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads a deployment's {@code pool} section: worker count (per node, per GPU, or {@code num_workers} for the
 * cluster), worker resources, node selector, restarts, whether it waits for capacity.
 */
final class PoolReader {

  private final Reading reading;
  private final Problems problems;

  PoolReader(Reading reading) {
    this.reading = reading;
    this.problems = reading.problems();
  }

  /**
   * The pool, or null if anything in it is wrong (reported).
   *
   * @param autoscaling the deployment's autoscaling: present, empty (none), or null (present but wrong)
   */
  PoolPlacement read(MappingReader p, Optional<AutoscalingSpec> autoscaling) {
    int before = problems.count();
    boolean perNodeGiven = p.has("workers_per_node");
    boolean perGpuGiven = p.has("per_gpu");
    boolean totalGiven = p.has("num_workers");
    Integer perNode = p.integer("workers_per_node", null, 1, PoolPlacement.MAX_WORKERS);
    Integer perGpu = p.integer("per_gpu", null, 1, PoolPlacement.MAX_WORKERS);
    Integer total = p.integer("num_workers", null, 1, PoolPlacement.MAX_TOTAL_WORKERS);
    if (totalGiven && (perNodeGiven || perGpuGiven)) {
      problems.at(p.keyAt("num_workers"), p.path("num_workers"), "set either num_workers (a cluster-wide total) or "
          + (perNodeGiven ? "workers_per_node" : "per_gpu") + " (per node), not both");
    } else if (totalGiven && autoscaling != null && autoscaling.isPresent()) {
      problems.at(p.keyAt("num_workers"), p.path("num_workers"), "num_workers (a cluster-wide total) does not combine"
          + " with autoscaling, whose bounds are per node: use workers_per_node, or leave the count to autoscaling");
    } else if (perNodeGiven && perGpuGiven) {
      problems.at(p.keyAt("per_gpu"), p.path("per_gpu"), "set either workers_per_node or per_gpu, not both");
    } else if (!perNodeGiven && !perGpuGiven && !totalGiven && p.valid() && autoscaling != null
        && autoscaling.isEmpty()) {
      problems.at(p.node(), p.path("workers_per_node"),
          "one of workers_per_node, per_gpu or num_workers is required (or an autoscaling section)");
    }
    MappingReader resourceSection = p.section("worker_resources");
    Resources resources = ResourcesSection.read(reading, resourceSection, PoolPlacement.DEFAULT_WORKER_RESOURCES);
    Map<String, String> selector = selector(p.section("node_selector"));
    Integer maxRestarts = p.integer("max_restarts", PoolPlacement.DEFAULT_MAX_RESTARTS, -1, 1_000_000);
    Boolean waitForCapacity = p.bool("wait_for_capacity", false);
    p.finish();

    if (perGpu != null && resources != null) {
      String message = Rules.perGpuResources(perGpu, resources.unitsOf(Resources.GPU), Resources.SCALE);
      if (message != null) {
        MappingReader r = resourceSection;
        Node at = r.present() ? (r.has(Resources.GPU) ? r.at(Resources.GPU) : r.node()) : p.keyAt("per_gpu");
        problems.at(at, p.path("worker_resources"), message);
      }
    }
    if (problems.count() > before || autoscaling == null || !p.valid() || waitForCapacity == null) {
      return null;
    }
    PoolPlacement.WorkerCount workers;
    if (total != null) {
      workers = new PoolPlacement.Total(total);
    } else if (perGpu != null) {
      workers = new PoolPlacement.PerGpu(perGpu);
    } else if (perNode != null) {
      workers = new PoolPlacement.PerNode(perNode);
    } else {
      // Autoscaled without a count: the autoscaling bounds alone decide.
      workers = new PoolPlacement.PerNode(autoscaling.orElseThrow().maxWorkers());
    }
    return new PoolPlacement(workers, resources, selector, maxRestarts, waitForCapacity);
  }

  private Map<String, String> selector(MappingReader s) {
    Map<String, String> labels = new TreeMap<>();
    if (!s.present()) {
      return labels;
    }
    boolean ok = true;
    for (NodeTuple t : s.entries()) {
      String key = ((ScalarNode) t.getKeyNode()).getValue();
      Node v = t.getValueNode();
      String value;
      // Labels are strings; `gpu: true` means the label text "true", as `--labels gpu=true` sets it.
      if (v instanceof ScalarNode sv && Reading.isTag(sv, Tag.BOOL)) {
        value = sv.getValue();
      } else {
        value = reading.text(v, s.path(key));
      }
      if (key.isBlank()) {
        problems.at(t.getKeyNode(), s.path(key), "label names must not be empty");
        ok = false;
      } else if (value == null) {
        ok = false;
      } else {
        labels.put(key, value);
      }
    }
    return ok ? labels : null;
  }
}
