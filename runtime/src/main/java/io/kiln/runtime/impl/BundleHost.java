package io.kiln.runtime.impl;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy.InPlacementGroup;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The placement-group bundles this node holds: the node side of the two-phase reservation (prepare takes the
 * bundle's resources from the node's {@link ResourceLedger}, commit makes it usable, cancel frees it), the
 * {@link BundleLedger} actors and tasks placed into a bundle reserve from, and the cleanup of bundles the
 * group table no longer names.
 *
 * <p>Cleanup rules, so that no reservation outlives its group whatever dies when: a prepared bundle not
 * committed within {@link #PREPARE_TTL_MS} is freed (its coordinator died or gave up); a committed bundle the
 * table does not name (row gone, another node or reservation named for its index) for longer than
 * {@link #PREPARE_TTL_MS} is freed; a bundle of a REMOVED or FAILED group is freed at once. Freeing a bundle
 * kills the actors in it and fails the tasks running in it.
 *
 * <p>Thread-safe: state is guarded by this object's monitor; kills and callbacks run outside it.
 */
final class BundleHost {

  private static final Logger LOG = LoggerFactory.getLogger(BundleHost.class);
  /** How long a prepared bundle waits for its commit, and a committed one the table does not name survives. */
  static final long PREPARE_TTL_MS = 30_000;

  record Key(String groupId, int index) {
    @Override
    public String toString() {
      return "bundle " + index + " of placement group " + groupId;
    }
  }

  private static final class Bundle {
    final Key key;
    final String attempt;
    final Allocation reservation;
    final BundleLedger ledger;
    final long sinceNanos;
    boolean committed;
    final Set<Long> issued = new HashSet<>();
    final Map<Long, Runnable> tasks = new HashMap<>();

    Bundle(Key key, String attempt, Allocation reservation, long sinceNanos) {
      this.key = key;
      this.attempt = attempt;
      this.reservation = reservation;
      this.ledger = new BundleLedger(reservation);
      this.sinceNanos = sinceNanos;
    }
  }

  private final String nodeId;
  private final ResourceLedger ledger;
  private final LocalActors cells;
  private final PlacementGroupTable table;
  private final LongSupplier nanoClock;
  private final Runnable nodeResourcesChanged;
  private final Runnable bundleResourcesFreed;
  private final Map<Key, Bundle> bundles = new LinkedHashMap<>();
  private final Map<Long, Bundle> byAllocation = new HashMap<>();

  /**
   * @param nodeResourcesChanged told when a bundle takes or returns node resources (the row is republished)
   * @param bundleResourcesFreed told when room frees inside a bundle or a bundle appears (waiting placements retry)
   */
  BundleHost(String nodeId, ResourceLedger ledger, LocalActors cells, PlacementGroupTable table, LongSupplier nanoClock,
             Runnable nodeResourcesChanged, Runnable bundleResourcesFreed) {
    this.nodeId = nodeId;
    this.ledger = ledger;
    this.cells = cells;
    this.table = table;
    this.nanoClock = nanoClock;
    this.nodeResourcesChanged = nodeResourcesChanged;
    this.bundleResourcesFreed = bundleResourcesFreed;
  }

  // ---- two-phase reservation ------------------------------------------------------------------------

  /**
   * Phase one: takes {@code resources} from the node's ledger for the bundle. A bundle of the same index held
   * under another reservation is stale (the table placed that index afresh) and is freed first.
   *
   * @return null when prepared (or already prepared by this reservation), else why not
   */
  String prepare(Key key, String attempt, Resources resources) {
    Bundle stale;
    synchronized (this) {
      Bundle existing = bundles.get(key);
      if (existing != null && existing.attempt.equals(attempt)) {
        return null;
      }
      stale = existing;
    }
    if (stale != null) {
      free(stale, "it was placed again");
    }
    synchronized (this) {
      Optional<Allocation> a = ledger.tryReserve(resources);
      if (a.isEmpty()) {
        return "node " + nodeId + " has " + ledger.available() + " available, " + key + " needs " + resources;
      }
      bundles.put(key, new Bundle(key, attempt, a.get(), nanoClock.getAsLong()));
    }
    nodeResourcesChanged.run();
    return null;
  }

  /** Phase two: the bundle becomes usable. False if it is not prepared here under {@code attempt}. */
  boolean commit(Key key, String attempt) {
    synchronized (this) {
      Bundle b = bundles.get(key);
      if (b == null || !b.attempt.equals(attempt)) {
        return false;
      }
      b.committed = true;
    }
    bundleResourcesFreed.run();
    return true;
  }

  /**
   * Frees the group's bundles here: index {@code null} for all of them, {@code attempt} null for any
   * reservation. Kills what runs in them. Idempotent.
   */
  void cancel(String groupId, Integer index, String attempt, String cause) {
    List<Bundle> doomed = new ArrayList<>();
    synchronized (this) {
      for (Bundle b : bundles.values()) {
        if (b.key.groupId().equals(groupId) && (index == null || b.key.index() == index)
            && (attempt == null || b.attempt.equals(attempt))) {
          doomed.add(b);
        }
      }
    }
    doomed.forEach(b -> free(b, cause));
  }

  /** Serves the two-phase commands ({@code pg.prepare}, {@code pg.commit}, {@code pg.cancel}) sent to the agent. */
  ReplyMessage command(io.vertx.core.json.JsonObject cmd, boolean closing) {
    String groupId = cmd.getString("groupId");
    Integer index = cmd.getInteger("index");
    String attempt = cmd.getString("attempt");
    switch (cmd.getString("op")) {
      case "pg.prepare" -> {
        String refused = closing ? "node " + nodeId + " is shutting down"
            : prepare(new Key(groupId, index), attempt, OptionsJson.resources(cmd.getJsonObject("resources").getMap()));
        return refused == null ? ReplyMessage.ok(null, Void.class)
            : ReplyMessage.failed(new PlacementRefusedException(refused));
      }
      case "pg.commit" -> {
        return commit(new Key(groupId, index), attempt) ? ReplyMessage.ok(null, Void.class)
            : ReplyMessage.failed(new PlacementRefusedException(new Key(groupId, index) + " is not prepared on node "
                + nodeId + " (expired or cancelled)"));
      }
      default -> {
        cancel(groupId, index, attempt, cmd.getString("cause", "cancelled"));
        return ReplyMessage.ok(null, Void.class);
      }
    }
  }

  // ---- actors and tasks in bundles -------------------------------------------------------------------

  /**
   * Reserves {@code request} in the bundle {@code where} names (any committed bundle of the group here for
   * index -1).
   *
   * @return the allocation, or empty with {@code whyNot[0]} set
   */
  synchronized Optional<Allocation> reserve(InPlacementGroup where, Resources request, String[] whyNot) {
    boolean any = false;
    for (Bundle b : bundles.values()) {
      if (!b.committed || !b.key.groupId().equals(where.groupId())
          || (where.bundleIndex() >= 0 && b.key.index() != where.bundleIndex())) {
        continue;
      }
      any = true;
      Optional<Allocation> a = b.ledger.tryReserve(request);
      if (a.isPresent()) {
        b.issued.add(a.get().id());
        byAllocation.put(a.get().id(), b);
        return a;
      }
    }
    String which = where.bundleIndex() < 0 ? "any bundle of placement group " + where.groupId()
        : new Key(where.groupId(), where.bundleIndex()).toString();
    whyNot[0] = any ? which + " on node " + nodeId + " has no room for " + request + " now"
        : which + " is not held on node " + nodeId;
    return Optional.empty();
  }

  /** Returns a bundle allocation; false if {@code allocation} is not one (it is the node ledger's then). */
  boolean release(Allocation allocation) {
    synchronized (this) {
      Bundle b = byAllocation.remove(allocation.id());
      if (b == null) {
        return allocation.id() < 0; // of a bundle already freed: nothing to return anywhere
      }
      b.issued.remove(allocation.id());
      b.tasks.remove(allocation.id());
      b.ledger.release(allocation);
    }
    bundleResourcesFreed.run();
    return true;
  }

  /** A task runs on {@code allocation}; {@code cancel} fails its caller if the bundle is freed first. */
  synchronized void taskRunning(Allocation allocation, Runnable cancel) {
    Bundle b = byAllocation.get(allocation.id());
    if (b != null) {
      b.tasks.put(allocation.id(), cancel);
    }
  }

  // ---- cleanup -----------------------------------------------------------------------------------

  /** Frees bundles the group table no longer names (see the class comment). Called periodically and on change. */
  void sweep() {
    long now = nanoClock.getAsLong();
    List<Bundle> doomed = new ArrayList<>();
    List<String> causes = new ArrayList<>();
    synchronized (this) {
      for (Bundle b : bundles.values()) {
        String cause = staleness(b, now);
        if (cause != null) {
          doomed.add(b);
          causes.add(cause);
        }
      }
    }
    for (int i = 0; i < doomed.size(); i++) {
      free(doomed.get(i), causes.get(i));
    }
  }

  private String staleness(Bundle b, long now) {
    boolean old = TimeUnit.NANOSECONDS.toMillis(now - b.sinceNanos) > PREPARE_TTL_MS;
    if (!b.committed) {
      return old ? "its reservation was never committed" : null;
    }
    Optional<PlacementGroupTable.Row> row = table.row(b.key.groupId());
    if (row.isPresent() && row.get().rec().state().terminal()) {
      return "placement group " + row.get().rec().displayName() + " is " + row.get().rec().state();
    }
    GroupRecord rec = row.map(PlacementGroupTable.Row::rec).orElse(null);
    boolean named = rec != null && b.key.index() < rec.size() && nodeId.equals(rec.nodes().get(b.key.index()))
        && b.attempt.equals(rec.attempts().get(b.key.index()));
    return named || !old ? null : "the placement group table no longer holds it here";
  }

  /** Frees every bundle (the node shuts down); kills nothing (the node kills its actors itself). */
  synchronized void clear() {
    bundles.values().forEach(b -> ledger.release(b.reservation));
    bundles.clear();
    byAllocation.clear();
  }

  synchronized int size() {
    return bundles.size();
  }

  private void free(Bundle b, String cause) {
    List<Runnable> tasks;
    Set<Long> issued;
    synchronized (this) {
      if (bundles.get(b.key) != b) {
        return;
      }
      bundles.remove(b.key);
      issued = new HashSet<>(b.issued);
      issued.forEach(byAllocation::remove);
      tasks = new ArrayList<>(b.tasks.values());
      ledger.release(b.reservation);
    }
    if (b.committed) {
      LOG.info("{} freed on node {}: {}", b.key, nodeId, cause);
    }
    String why = b.key + " was freed: " + cause;
    for (ActorCell c : cells.cells()) {
      if (issued.contains(c.allocation.id())) {
        c.kill(why, false);
      }
    }
    tasks.forEach(Runnable::run);
    nodeResourcesChanged.run();
  }
}
