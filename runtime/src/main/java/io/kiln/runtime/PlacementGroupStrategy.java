package io.kiln.runtime;

/**
 * How a placement group's bundles are spread over nodes (Ray's placement-group strategies). Every strategy
 * reserves all bundles or none.
 */
public enum PlacementGroupStrategy {
  /** As few nodes as possible: all on one node if one fits them, otherwise packed best effort. */
  PACK,
  /** All bundles on one node, or the group waits (infeasible if no node could ever hold them all). */
  STRICT_PACK,
  /** Each bundle on a different node where possible; bundles share nodes only when there are too few. */
  SPREAD,
  /** Each bundle on a different node, or the group waits (infeasible with fewer big-enough nodes than bundles). */
  STRICT_SPREAD
}
