package io.kiln.runtime;

import java.util.concurrent.CompletionStage;

/**
 * A handle on a placement group (Ray's {@code PlacementGroup}): bundles of resources reserved together on
 * nodes chosen by the group's strategy. Actors and tasks run inside a bundle through
 * {@link SchedulingStrategy#placementGroup}: they take their resources from the bundle's reservation, not
 * from the node's free pool. Handles are cheap values and may be used from any node; the group itself lives
 * in the cluster's group table.
 *
 * <p>Methods are non-blocking; futures complete on Vert.x threads.
 */
public interface PlacementGroup {

  String id();

  /** What the group was created with. */
  PlacementGroupOptions options();

  /**
   * Completes once every bundle is reserved (the group is CREATED), at once if it already is. Fails with
   * {@link PlacementGroupException} if the group is FAILED (its timeout passed) or removed first.
   */
  CompletionStage<PlacementGroup> ready();

  /**
   * Removes the group: kills the actors and fails the tasks running in its bundles, frees the bundles'
   * resources, frees its name. Idempotent; completes once every node holding a bundle has freed it.
   */
  CompletionStage<Void> remove();

  /** The group's state and bundle→node table, read from the cluster. Fails with not-found once removed. */
  CompletionStage<PlacementGroupInfo> info();

  /** A strategy placing into bundle {@code index} (-1: any bundle with room). */
  default SchedulingStrategy bundle(int index) {
    return SchedulingStrategy.placementGroup(this, index);
  }
}
