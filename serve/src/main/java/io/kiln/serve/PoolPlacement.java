package io.kiln.serve;

import io.kiln.runtime.Resources;
import io.kiln.runtime.RetryPolicy;
import io.kiln.serve.impl.Rules;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Where a deployment's pools go and how big they are (the YAML's {@code pool} section): how many workers
 * each selected node runs, what each worker reserves, which nodes qualify and how often a worker that dies
 * is restarted. Serve turns it into one {@link io.kiln.pools.PoolSpec} per selected node
 * ({@link DeploymentSpec#poolOn}). Immutable; rules are checked on
 * construction ({@link IllegalArgumentException} naming the field).
 *
 * @param workers workers per selected node, fixed ({@link PerNode}) or by the node's GPUs ({@link PerGpu}),
 *     with autoscaling the most a node runs; or a cluster-wide total ({@link Total}) that the {@link Planner}
 *     spreads over the selected nodes
 * @param workerResources what every worker reserves on its node (e.g. {@code {CPU: 1}} or {@code {GPU: 1}});
 *     may be empty
 * @param nodeSelector labels a node must carry (all of them, exact values) to be selected; empty selects
 *     every node that can host a worker
 * @param maxRestarts restarts of a dead worker before it is given up (-1: unlimited)
 * @param waitForCapacity {@code wait_for_capacity}: where no node of the cluster could ever host one worker (by its
 *     total resources, GPUs and labels), whether the deployment is applied anyway and waits for a node that can to
 *     join (true), or a Kiln node refuses the apply at once (false, the default; see
 *     {@link ServeController.Unplaceable}). Changes in place.
 */
public record PoolPlacement(WorkerCount workers, Resources workerResources, Map<String, String> nodeSelector,
                            int maxRestarts, boolean waitForCapacity) {

  public static final Resources DEFAULT_WORKER_RESOURCES = Resources.cpu(1);
  /** {@link RetryPolicy#WORKER_RESTART}'s. */
  public static final int DEFAULT_MAX_RESTARTS = RetryPolicy.WORKER_RESTART.maxRetries();
  /** Upper bound of a per-node (or per-GPU) worker count. */
  public static final int MAX_WORKERS = 1024;
  /** Upper bound of a cluster-wide worker count ({@code num_workers}). */
  public static final int MAX_TOTAL_WORKERS = 65_536;

  /** A placement that does not wait for capacity ({@code wait_for_capacity: false}). */
  public PoolPlacement(WorkerCount workers, Resources workerResources, Map<String, String> nodeSelector,
                       int maxRestarts) {
    this(workers, workerResources, nodeSelector, maxRestarts, false);
  }

  public PoolPlacement {
    Objects.requireNonNull(workers, "workers");
    Objects.requireNonNull(workerResources, "workerResources");
    nodeSelector = Map.copyOf(new TreeMap<>(nodeSelector));
    nodeSelector.forEach((k, v) -> Rules.require("node_selector", Rules.notBlank(k)));
    Rules.require("max_restarts", Rules.atLeast(maxRestarts, -1));
    if (workers instanceof PerGpu g) {
      Rules.require("worker_resources",
          Rules.perGpuResources(g.count(), workerResources.unitsOf(Resources.GPU), Resources.SCALE));
    }
  }

  /** How many workers a selected node runs (or, for {@link Total}, the cluster does). */
  public sealed interface WorkerCount {

    /**
     * Workers for a node with {@code total} resources (0 when a per-GPU pool meets a node without GPUs); for a
     * {@link Total}, the most one node could get (the planner decides each node's share).
     */
    int on(Resources total);

    /** The YAML/JSON field this count is written as. */
    String field();

    /** The number written in that field. */
    int count();
  }

  /** {@code workers_per_node: count} on every selected node. */
  public record PerNode(int count) implements WorkerCount {
    public PerNode {
      Rules.require("workers_per_node", Rules.atLeast(count, 1));
      Rules.require("workers_per_node", Rules.atMost(count, MAX_WORKERS));
    }

    @Override
    public int on(Resources total) {
      return count;
    }

    @Override
    public String field() {
      return "workers_per_node";
    }
  }

  /** {@code per_gpu: count} workers for each whole GPU of the node. */
  public record PerGpu(int count) implements WorkerCount {
    public PerGpu {
      Rules.require("per_gpu", Rules.atLeast(count, 1));
      Rules.require("per_gpu", Rules.atMost(count, MAX_WORKERS));
    }

    @Override
    public int on(Resources total) {
      return (int) Math.min(MAX_WORKERS, count * (total.unitsOf(Resources.GPU) / Resources.SCALE));
    }

    @Override
    public String field() {
      return "per_gpu";
    }
  }

  /**
   * {@code num_workers: count} across the cluster: the {@link Planner} spreads them over the selected nodes as
   * evenly as their total resources allow, the remainder one each to the first nodes by node id; a node whose share
   * is 0 runs no pool. Each pass re-plans, so a node joining or leaving moves workers.
   */
  public record Total(int count) implements WorkerCount {
    public Total {
      Rules.require("num_workers", Rules.atLeast(count, 1));
      Rules.require("num_workers", Rules.atMost(count, MAX_TOTAL_WORKERS));
    }

    @Override
    public int on(Resources total) {
      return Math.min(count, MAX_WORKERS);
    }

    @Override
    public String field() {
      return "num_workers";
    }
  }
}
