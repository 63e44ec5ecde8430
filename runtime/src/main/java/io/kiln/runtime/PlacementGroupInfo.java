package io.kiln.runtime;

import java.util.List;
import java.util.Objects;

/**
 * A placement group as the cluster's group table holds it now. Immutable snapshot.
 *
 * @param groupId unique id, the key of the group everywhere
 * @param namespace namespace of the name
 * @param name the group's name, or null
 * @param strategy how its bundles are placed
 * @param bundles the resources of each bundle, by index
 * @param lifetime {@link Lifetime#OWNED}: removed when the node that created it leaves; detached: until removed
 * @param state where it stands
 * @param bundleNodes the node holding each bundle, by index; null entries for bundles not (or no longer) placed
 * @param reason why it waits or failed, or null
 */
public record PlacementGroupInfo(String groupId, String namespace, String name, PlacementGroupStrategy strategy,
                                 List<Resources> bundles, Lifetime lifetime, PlacementGroupState state,
                                 List<String> bundleNodes, String reason) {

  public PlacementGroupInfo {
    Objects.requireNonNull(groupId, "groupId");
    bundles = List.copyOf(bundles);
    bundleNodes = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(bundleNodes));
  }
}
