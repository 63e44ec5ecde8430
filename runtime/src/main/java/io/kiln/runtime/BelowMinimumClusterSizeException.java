package io.kiln.runtime;

/**
 * A write to cluster state that split-brain protection guards ({@link ClusterOptions#minClusterSize()}: the
 * named-actor registry, the node table, placement groups, the desired deployments and pipelines, pipeline runs, jobs,
 * the node-cache index) was refused because this node sees fewer members than
 * the minimum: it is on the smaller side of a partition, or the cluster is short of members. Nothing was written; reads
 * still work. Retrying makes sense once the members are back (the partition healed, nodes restarted).
 */
public class BelowMinimumClusterSizeException extends KilnException {

  private final int minimum;
  private final int members;

  public BelowMinimumClusterSizeException(String map, int minimum, int members, Throwable cause) {
    super("write to " + map + " refused: this node sees " + members + " cluster member" + (members == 1 ? "" : "s")
        + ", below the minimum cluster size of " + minimum + " (--min-cluster-size): it is on the smaller side of a"
        + " partition, or the cluster is short of members", cause);
    this.minimum = minimum;
    this.members = members;
  }

  /** The minimum cluster size configured. */
  public int minimum() {
    return minimum;
  }

  /** How many members this node saw when the write was refused. */
  public int members() {
    return members;
  }
}
