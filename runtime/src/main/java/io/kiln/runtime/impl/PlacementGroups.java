package io.kiln.runtime.impl;

import io.kiln.runtime.PlacementGroup;
import io.kiln.runtime.PlacementGroupException;
import io.kiln.runtime.PlacementGroupInfo;
import io.kiln.runtime.PlacementGroupNotFoundException;
import io.kiln.runtime.PlacementGroupOptions;
import io.kiln.runtime.PlacementGroupState;
import io.kiln.runtime.Resources;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.SchedulingStrategy.InPlacementGroup;
import io.kiln.runtime.scheduling.BundleScheduler;
import io.kiln.runtime.scheduling.Placement;
import io.vertx.core.json.JsonObject;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The placement-group API of one node: creating groups (a PENDING row; the leader's {@link GroupCoordinator}
 * reserves them), handles, lookup, removal from any node, and placement of actors and tasks into bundles,
 * answered from the local copy of the group table. Thread-safe.
 */
final class PlacementGroups implements TwoPhaseReservation.Reserver {

  /** How many ids of groups found gone are remembered, so placements into them fail rather than wait. */
  private static final int GONE_REMEMBERED = 1024;
  private static final RetryPolicy REMOVE = RetryPolicy.PLACEMENT_GROUP_REMOVE;

  private final String nodeId;
  private final PlacementGroupTable table;
  private final CallPath callPath;
  private final Supplier<List<String>> members;
  private final Clock clock;
  private final Runnable placementsChanged;
  private final Set<String> fetching = ConcurrentHashMap.newKeySet();
  private final Map<String, Boolean> gone = java.util.Collections.synchronizedMap(
      new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > GONE_REMEMBERED;
        }
      });

  /** @param placementsChanged told when a placement that waited on an unknown group may now be decided */
  PlacementGroups(String nodeId, PlacementGroupTable table, CallPath callPath, Supplier<List<String>> members,
                  Clock clock, Runnable placementsChanged) {
    this.nodeId = nodeId;
    this.table = table;
    this.callPath = callPath;
    this.members = members;
    this.clock = clock;
    this.placementsChanged = placementsChanged;
  }

  CompletionStage<PlacementGroup> create(PlacementGroupOptions o) {
    GroupRecord rec = GroupRecord.pending("pg-" + Ids.newId(), o, nodeId, clock.millis());
    return table.create(rec).thenApply(ok -> {
      if (!ok) {
        throw new PlacementGroupException("placement group name " + GroupRecord.nameKey(o.namespace(), o.name())
            + " is taken");
      }
      return handle(rec.groupId(), o);
    });
  }

  CompletionStage<PlacementGroup> byName(String namespace, String name) {
    String key = GroupRecord.nameKey(namespace, name);
    return table.idOfName(namespace, name).thenCompose(id -> id.isEmpty()
        ? CompletableFuture.failedFuture(new PlacementGroupNotFoundException("no placement group named " + key))
        : table.fetch(id.get()).thenApply(row -> handle(id.get(), row.orElseThrow(
            () -> new PlacementGroupNotFoundException("no placement group named " + key)).rec().options())));
  }

  CompletionStage<List<PlacementGroupInfo>> list() {
    return CompletableFuture.completedFuture(table.rows().stream().map(r -> r.rec().toInfo()).toList());
  }

  PlacementGroup handle(String groupId, PlacementGroupOptions options) {
    return new Handle(groupId, options);
  }

  private final class Handle implements PlacementGroup {
    private final String id;
    private final PlacementGroupOptions options;

    Handle(String id, PlacementGroupOptions options) {
      this.id = id;
      this.options = options;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public PlacementGroupOptions options() {
      return options;
    }

    @Override
    public CompletionStage<PlacementGroup> ready() {
      return table.await(id, r -> r.state() == PlacementGroupState.CREATED || r.state().terminal()).thenApply(r -> {
        if (r.isEmpty()) {
          throw new PlacementGroupException("placement group " + id + " was removed before it was ready");
        }
        if (r.get().state() != PlacementGroupState.CREATED) {
          throw new PlacementGroupException("placement group " + r.get().displayName() + " is " + r.get().state()
              + ": " + r.get().reason());
        }
        return this;
      });
    }

    @Override
    public CompletionStage<Void> remove() {
      return PlacementGroups.this.remove(id, "removed");
    }

    @Override
    public CompletionStage<PlacementGroupInfo> info() {
      return table.fetch(id).thenApply(r -> r.orElseThrow(() -> new PlacementGroupNotFoundException(
          "no placement group " + id + " (removed?)")).rec().toInfo());
    }

    @Override
    public String toString() {
      return "PlacementGroup(" + id + (options.name() == null ? "" : ", " + options.name()) + ")";
    }
  }

  /**
   * Marks the row REMOVED (a coordinator placing it meanwhile then fails its write and cancels what it
   * reserved), frees the bundles on every node the row names, and deletes the row and its name.
   */
  CompletionStage<Void> remove(String groupId, String cause) {
    return removeAttempt(groupId, cause, 1);
  }

  private CompletionStage<Void> removeAttempt(String groupId, String cause, int attempt) {
    return table.fetch(groupId).thenCompose(found -> {
      if (found.isEmpty()) {
        return CompletableFuture.<Void>completedFuture(null);
      }
      PlacementGroupTable.Row row = found.get();
      GroupRecord rec = row.rec();
      CompletionStage<Optional<PlacementGroupTable.Row>> marked = rec.state() == PlacementGroupState.REMOVED
          ? CompletableFuture.completedFuture(Optional.of(row))
          : table.replace(row, rec.with(PlacementGroupState.REMOVED, rec.nodes(), rec.attempts(), cause,
              rec.waitingSinceMs()));
      return marked.thenCompose(removed -> {
        if (removed.isEmpty()) {
          if (!REMOVE.allows(attempt)) {
            return CompletableFuture.failedFuture(new PlacementGroupException("placement group " + groupId
                + " kept changing while being removed (" + REMOVE + ")"));
          }
          return removeAttempt(groupId, cause, attempt + 1);
        }
        Set<String> holders = new LinkedHashSet<>(rec.nodes());
        holders.remove(null);
        holders.retainAll(members.get());
        List<CompletionStage<Void>> freed = new ArrayList<>();
        for (String node : holders) {
          freed.add(cancelOn(node, groupId, null, null, "placement group " + rec.displayName() + " was " + cause)
              .exceptionally(e -> null));
        }
        return io.kiln.runtime.Futures.allOf(freed)
            .thenCompose(v -> table.delete(removed.get()))
            .thenApply(v -> (Void) null);
      });
    });
  }

  /**
   * Where an actor or task placed into a bundle goes: {@link BundleScheduler#placeInBundle} over the local
   * copy of the group's row. A group not in the copy is fetched (it may have been created on another node a
   * moment ago) and the request waits meanwhile; one found gone makes such requests infeasible.
   */
  Placement placeInto(Resources need, InPlacementGroup where) {
    Optional<PlacementGroupTable.Row> row = table.row(where.groupId());
    if (row.isEmpty()) {
      if (gone.containsKey(where.groupId())) {
        return new Placement.Infeasible("placement group " + where.groupId() + " does not exist (removed?)");
      }
      if (fetching.add(where.groupId())) {
        table.fetch(where.groupId()).whenComplete((r, e) -> {
          fetching.remove(where.groupId());
          if (e == null && r.isEmpty()) {
            gone.put(where.groupId(), true);
          }
          placementsChanged.run();
        });
      }
      return new Placement.Pending("placement group " + where.groupId() + " is not known on node " + nodeId + " yet");
    }
    GroupRecord rec = row.get().rec();
    // A bundle on a node that left is not placed, whatever the row still says: the leader is about to
    // reschedule it (an actor relocated off that node must wait for the new bundle, not be sent to the dead one).
    List<String> live = members.get();
    List<String> nodes = new ArrayList<>(rec.nodes());
    nodes.replaceAll(n -> n != null && live.contains(n) ? n : null);
    return BundleScheduler.placeInBundle(need, where.bundleIndex(), rec.displayName(), rec.state(), rec.resources(),
        nodes);
  }

  // ---- the node side of two-phase reservation, by message ------------------------------------------------

  @Override
  public CompletionStage<Void> prepare(String node, BundleHost.Key key, String attempt, Resources resources) {
    JsonObject cmd = command("pg.prepare", key.groupId(), key.index(), attempt)
        .put("resources", new JsonObject(new LinkedHashMap<>(resources.units())));
    return callPath.request(node, NodeAgent.address(node), cmd, Void.class, CallPath.CONTROL);
  }

  @Override
  public CompletionStage<Void> commit(String node, BundleHost.Key key, String attempt) {
    return callPath.request(node, NodeAgent.address(node), command("pg.commit", key.groupId(), key.index(), attempt),
        Void.class, CallPath.CONTROL);
  }

  @Override
  public CompletionStage<Void> cancel(String node, BundleHost.Key key, String attempt) {
    return cancelOn(node, key.groupId(), key.index(), attempt, "its reservation was cancelled");
  }

  CompletionStage<Void> cancelOn(String node, String groupId, Integer index, String attempt, String cause) {
    JsonObject cmd = command("pg.cancel", groupId, index, attempt).put("cause", cause);
    return callPath.request(node, NodeAgent.address(node), cmd, Void.class, CallPath.CONTROL);
  }

  private static JsonObject command(String op, String groupId, Integer index, String attempt) {
    JsonObject cmd = new JsonObject().put("op", op).put("groupId", groupId);
    if (index != null) {
      cmd.put("index", index);
    }
    if (attempt != null) {
      cmd.put("attempt", attempt);
    }
    return cmd;
  }
}
