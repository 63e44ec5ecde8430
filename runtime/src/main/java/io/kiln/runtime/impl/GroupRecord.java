package io.kiln.runtime.impl;

import io.kiln.runtime.Lifetime;
import io.kiln.runtime.PlacementGroupInfo;
import io.kiln.runtime.PlacementGroupOptions;
import io.kiln.runtime.PlacementGroupState;
import io.kiln.runtime.PlacementGroupStrategy;
import io.kiln.runtime.Resources;
import io.kiln.runtime.WireCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A placement group's row in the group table ({@code kiln.placement-groups}, key the group id), stored as
 * JSON. Written PENDING by the creator; then by the leader as it reserves, reschedules or fails the group,
 * and by any remover (REMOVED, then deleted). Every write is a compare-and-set on the previous JSON.
 *
 * @param bundles each bundle's resources in fixed-point units ({@link Resources#units()})
 * @param creatorNodeId the node that created it; an OWNED group is removed when that node leaves
 * @param nodes the node holding each bundle, null where not placed
 * @param attempts per bundle, the id of the reservation that holds it on its node (a node frees a bundle
 *     whose reservation the table does not name, after a grace period: a coordinator died mid-way)
 * @param reason why it waits or failed, or null
 * @param timeoutMs 0 = wait forever; else FAILED after waiting this long
 * @param waitingSinceMs when it last became PENDING or RESCHEDULING (wall clock, leader's)
 * @param version bumped on every write
 */
record GroupRecord(String groupId, String namespace, String name, PlacementGroupStrategy strategy,
                   List<Map<String, Long>> bundles, Lifetime lifetime, String creatorNodeId,
                   PlacementGroupState state, List<String> nodes, List<String> attempts, String reason,
                   long timeoutMs, long waitingSinceMs, long version) {

  static final String MAP = "kiln.placement-groups";
  static final String NAMES = "kiln.placement-group-names";

  GroupRecord {
    nodes = Collections.unmodifiableList(new ArrayList<>(nodes));
    attempts = Collections.unmodifiableList(new ArrayList<>(attempts));
  }

  static GroupRecord pending(String groupId, PlacementGroupOptions o, String creatorNodeId, long nowMs) {
    List<Map<String, Long>> units = o.bundles().stream().map(Resources::units).toList();
    List<String> none = Collections.nCopies(units.size(), null);
    return new GroupRecord(groupId, o.namespace(), o.name(), o.strategy(), units, o.lifetime(), creatorNodeId,
        PlacementGroupState.PENDING, none, none, null, o.timeout().toMillis(), nowMs, 0);
  }

  static String nameKey(String namespace, String name) {
    return namespace + "/" + name;
  }

  List<Resources> resources() {
    return bundles.stream().map(Resources::ofUnits).toList();
  }

  Resources bundle(int index) {
    return Resources.ofUnits(bundles.get(index));
  }

  int size() {
    return bundles.size();
  }

  GroupRecord with(PlacementGroupState newState, List<String> newNodes, List<String> newAttempts, String newReason,
                   long newWaitingSinceMs) {
    return new GroupRecord(groupId, namespace, name, strategy, bundles, lifetime, creatorNodeId, newState, newNodes,
        newAttempts, newReason, timeoutMs, newWaitingSinceMs, version + 1);
  }

  GroupRecord withReason(String newReason) {
    return with(state, nodes, attempts, newReason, waitingSinceMs);
  }

  PlacementGroupOptions options() {
    return new PlacementGroupOptions(resources(), strategy, name, namespace, lifetime, Duration.ofMillis(timeoutMs));
  }

  PlacementGroupInfo toInfo() {
    return new PlacementGroupInfo(groupId, namespace, name, strategy, resources(), lifetime, state, nodes, reason);
  }

  String displayName() {
    return name == null ? groupId : nameKey(namespace, name) + " (" + groupId + ")";
  }

  static GroupRecord decode(String json) {
    return WireCodec.fromJson(json, GroupRecord.class);
  }

  String encode() {
    return WireCodec.toJson(this);
  }
}
