package io.kiln.runtime;

/** The life of a placement group, as every node reads it from the cluster's group table. */
public enum PlacementGroupState {
  /** Not every bundle is reserved yet; placement is retried as resources free up or nodes join. */
  PENDING,
  /** Every bundle is reserved on its node; actors and tasks may be placed into them. */
  CREATED,
  /** A node holding bundles died; those bundles (all of a STRICT_PACK group) are being placed again. */
  RESCHEDULING,
  /** Removed by a caller or with its owner: its bundles are freed and what ran in them was killed. */
  REMOVED,
  /** Its placement timeout passed while PENDING or RESCHEDULING; whatever it held is freed. */
  FAILED;

  /** Whether the group will never hold resources again. */
  public boolean terminal() {
    return this == REMOVED || this == FAILED;
  }
}
