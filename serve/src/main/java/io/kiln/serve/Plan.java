package io.kiln.serve;

import io.kiln.pools.PoolNames;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.runtime.Resources;
import io.kiln.serve.impl.PlanJson;
import io.kiln.serve.impl.PlanText;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What applying deployments to a cluster would do, computed by {@link Planner}: for each deployment the
 * nodes it selects and why others are skipped, the workers and resources per node, and the problems that
 * would keep it from running as asked. The output of {@code kiln deploy --dry-run}, as a table
 * ({@link #toText()}) or JSON ({@link #toJson()}). Immutable.
 *
 * @param deployments one entry per spec, in the order given
 * @param nodes every node of the view, with what the plan would reserve on it
 * @param problems problems of the plan as a whole (a node oversubscribed by several deployments together)
 */
public record Plan(List<DeploymentPlan> deployments, List<NodeLoad> nodes, List<String> problems) {

  public Plan {
    deployments = List.copyOf(deployments);
    nodes = List.copyOf(nodes);
    problems = List.copyOf(problems);
  }

  /** An immutable copy iterating in key order, so renderings are stable. */
  private static Map<String, Double> sorted(Map<String, Double> m) {
    return Collections.unmodifiableMap(new TreeMap<>(m));
  }

  /** Whether nothing in the plan is a problem (warnings allowed). */
  public boolean ok() {
    return problems.isEmpty() && deployments.stream().allMatch(d -> d.problems().isEmpty());
  }

  /** Every problem, those of deployments prefixed with {@code name@version: }. */
  public List<String> allProblems() {
    List<String> all = new ArrayList<>();
    for (DeploymentPlan d : deployments) {
      d.problems().forEach(p -> all.add(d.id() + ": " + p));
    }
    all.addAll(problems);
    return all;
  }

  /** A readable table: one section per deployment, then the nodes. */
  public String toText() {
    return PlanText.render(this);
  }

  public ObjectNode toTree() {
    return PlanJson.render(this);
  }

  public String toJson() {
    return toTree().toString();
  }

  /**
   * The plan of one deployment.
   *
   * @param placements the selected nodes, by node id
   * @param skipped nodes not selected, with the reason
   * @param problems what keeps the deployment from running as asked (no node, too few resources)
   * @param warnings what deserves a look but does not stop it (workers waiting for resources now held)
   * @param noFit where no node of the view, alive or not, could ever host one worker (by its total resources, GPUs
   *     and labels, whatever is reserved now): why, and what a node would need; null where one could (or the view
   *     has no nodes)
   */
  public record DeploymentPlan(String name, String version, List<Placement> placements, List<SkippedNode> skipped,
                               List<String> problems, List<String> warnings, NoFit noFit) {

    public DeploymentPlan {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(version, "version");
      placements = List.copyOf(placements);
      skipped = List.copyOf(skipped);
      problems = List.copyOf(problems);
      warnings = List.copyOf(warnings);
    }

    public String id() {
      return PoolNames.deployment(name, version);
    }

    /** Workers started across all selected nodes. */
    public int totalWorkers() {
      return placements.stream().mapToInt(Placement::workers).sum();
    }
  }

  /**
   * A deployment's pool on one node.
   *
   * @param workers workers started (autoscaling: {@code min_workers})
   * @param maxWorkers most workers the pool may run there (equal to {@code workers} without autoscaling)
   * @param fitsTotal workers the node's total resources could host ({@link Integer#MAX_VALUE}: no limit)
   * @param fitsAvailable workers its available resources could host now, after earlier deployments of the plan
   * @param perWorker what each worker reserves
   * @param needed what {@code workers} workers reserve together
   * @param available the node's available resources before this pool (after earlier deployments of the plan)
   * @param poolManager the pool manager's actor name
   * @param workerNames the started workers' actor names
   */
  public record Placement(String nodeId, String address, int workers, int maxWorkers, int fitsTotal,
                          int fitsAvailable, Resources perWorker, Map<String, Double> needed,
                          Map<String, Double> available, String poolManager, List<String> workerNames) {

    public Placement {
      Objects.requireNonNull(nodeId, "nodeId");
      needed = sorted(needed);
      available = sorted(available);
      workerNames = List.copyOf(workerNames);
    }
  }

  /** A node a deployment does not use, and why (not alive, labels, too small). */
  public record SkippedNode(String nodeId, String reason) {
  }

  /**
   * Why no node of the cluster could ever host one worker of a deployment, and what would: the difference between
   * resources busy now (workers wait for them to free) and a cluster too small for even one worker.
   *
   * @param reason each node's reason, e.g. {@code solo: cannot host one worker: each needs {CPU: 64}, node total
   *     {CPU: 2}} (the first few nodes, then how many more)
   * @param needs what a node joining would need, e.g. {@code a node with CPU ≥ 64}
   */
  public record NoFit(String reason, String needs) {

    public NoFit {
      Objects.requireNonNull(reason, "reason");
      Objects.requireNonNull(needs, "needs");
    }
  }

  /**
   * One node of the view and what the plan would reserve on it.
   *
   * @param planned what all placements of the plan on this node reserve together
   * @param deployments ids of the deployments placed here
   */
  public record NodeLoad(String nodeId, String address, boolean alive, Resources total, Resources available,
                         Map<String, Double> planned, List<String> deployments) {

    public NodeLoad {
      planned = sorted(planned);
      deployments = List.copyOf(deployments);
    }
  }
}
