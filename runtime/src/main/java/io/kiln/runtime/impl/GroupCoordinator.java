package io.kiln.runtime.impl;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.Lifetime;
import io.kiln.runtime.PlacementGroupState;
import io.kiln.runtime.PlacementGroupStrategy;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.scheduling.BundlePlacement;
import io.kiln.runtime.scheduling.BundleRequest;
import io.kiln.runtime.scheduling.BundleScheduler;
import io.vertx.core.Context;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader duty for placement groups (only the leader runs it, so two nodes never place one group): places
 * PENDING and RESCHEDULING groups with {@link BundleScheduler} and reserves them with
 * {@link TwoPhaseReservation}; marks groups RESCHEDULING when a node holding bundles leaves (a STRICT_PACK
 * group moves whole, others only the lost bundles); fails groups whose timeout passed; removes OWNED groups
 * whose creating node left. A new leader picks up where the old one stopped: everything it needs is in the
 * group table, and reservations the old one left half-done expire on their nodes.
 *
 * <p>Passes are coalesced (at most one per {@link #PASS_INTERVAL_MS}, plus one every {@link #IDLE_PASS_MS}) and run on one Vert.x context; a group is worked on by one attempt at a time.
 */
final class GroupCoordinator {

  private static final Logger LOG = LoggerFactory.getLogger(GroupCoordinator.class);
  static final long PASS_INTERVAL_MS = 20;
  private static final long IDLE_PASS_MS = 250;
  /** After a node refused a bundle, the group's next attempt waits this long. */
  static final long REFUSED_BACKOFF_MS = RetryPolicy.PLACEMENT_GROUP_REFUSED.delayMillis(1);

  private final Context context;
  private final Supplier<Boolean> isLeader;
  private final Supplier<List<String>> members;
  private final PlacementGroupTable table;
  private final Supplier<ClusterView> view;
  private final TwoPhaseReservation.Reserver reserver;
  private final BiFunction<String, String, java.util.concurrent.CompletionStage<Void>> remover;
  private final Clock clock;
  private final Set<String> busy = new HashSet<>();
  private final java.util.Map<String, Long> notBefore = new java.util.HashMap<>();
  private final AtomicBoolean kickRequested = new AtomicBoolean();
  private long lastPassNanos = System.nanoTime() - PASS_INTERVAL_MS * 1_000_000;
  private long timer = -1;

  /** @param remover removes a group by id with a cause ({@link PlacementGroups#remove}) */
  GroupCoordinator(Context context, Supplier<Boolean> isLeader, Supplier<List<String>> members,
                   PlacementGroupTable table, Supplier<ClusterView> view, TwoPhaseReservation.Reserver reserver,
                   BiFunction<String, String, java.util.concurrent.CompletionStage<Void>> remover, Clock clock) {
    this.context = context;
    this.isLeader = isLeader;
    this.members = members;
    this.table = table;
    this.view = view;
    this.reserver = reserver;
    this.remover = remover;
    this.clock = clock;
  }

  void start() {
    context.runOnContext(v -> timer = context.owner().setPeriodic(IDLE_PASS_MS, id -> kick()));
  }

  void stop() {
    context.runOnContext(v -> context.owner().cancelTimer(timer));
  }

  /** Something changed (a row, a node, membership): a pass runs now or within the interval. Any thread. */
  void kick() {
    if (!isLeader.get() || !kickRequested.compareAndSet(false, true)) {
      return;
    }
    context.runOnContext(v -> {
      long waitMs = PASS_INTERVAL_MS - (System.nanoTime() - lastPassNanos) / 1_000_000;
      if (waitMs <= 0) {
        pass();
      } else {
        context.owner().setTimer(waitMs, id -> pass());
      }
    });
  }

  private void pass() {
    kickRequested.set(false);
    lastPassNanos = System.nanoTime();
    if (!isLeader.get()) {
      return;
    }
    Set<String> live = new HashSet<>(members.get());
    List<PlacementGroupTable.Row> rows = table.rows();
    if (!notBefore.isEmpty()) {
      Set<String> ids = new HashSet<>();
      rows.forEach(r -> ids.add(r.rec().groupId()));
      notBefore.keySet().retainAll(ids);
    }
    for (PlacementGroupTable.Row row : rows) {
      GroupRecord rec = row.rec();
      if (busy.contains(rec.groupId()) || rec.state().terminal()) {
        continue;
      }
      if (rec.lifetime() == Lifetime.OWNED && !live.contains(rec.creatorNodeId())) {
        LOG.info("removing placement group {}: its creator node {} is gone", rec.displayName(), rec.creatorNodeId());
        work(rec, remover.apply(rec.groupId(), "removed with its creator node " + rec.creatorNodeId()));
      } else if (rec.nodes().stream().anyMatch(n -> n != null && !live.contains(n))) {
        reschedule(row, live);
      } else if (rec.state() != PlacementGroupState.CREATED) {
        Long after = notBefore.get(rec.groupId());
        if (after != null && System.nanoTime() - after < 0) {
          continue;
        }
        notBefore.remove(rec.groupId());
        long waited = clock.millis() - rec.waitingSinceMs();
        if (rec.timeoutMs() > 0 && waited > rec.timeoutMs()) {
          fail(row);
        } else {
          place(row);
        }
      }
    }
  }

  private void work(GroupRecord rec, java.util.concurrent.CompletionStage<?> done) {
    busy.add(rec.groupId());
    done.whenComplete((v, e) -> context.runOnContext(x -> {
      busy.remove(rec.groupId());
      if (e != null) {
        LOG.debug("placement group {}: {}", rec.displayName(), e.toString());
      }
      kick();
    }));
  }

  /** Forgets the bundles of nodes that left (all of them for STRICT_PACK) and marks the group RESCHEDULING. */
  private void reschedule(PlacementGroupTable.Row row, Set<String> live) {
    GroupRecord rec = row.rec();
    List<String> nodes = new ArrayList<>(rec.nodes());
    List<String> attempts = new ArrayList<>(rec.attempts());
    Set<String> lost = new java.util.TreeSet<>();
    List<TwoPhaseReservation.Part> survivors = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      String n = nodes.get(i);
      boolean dead = n != null && !live.contains(n);
      if (dead) {
        lost.add(n);
      }
      if (dead || (n != null && rec.strategy() == PlacementGroupStrategy.STRICT_PACK)) {
        if (!dead) {
          survivors.add(new TwoPhaseReservation.Part(new BundleHost.Key(rec.groupId(), i), n, attempts.get(i),
              rec.bundle(i)));
        }
        nodes.set(i, null);
        attempts.set(i, null);
      }
    }
    String reason = "node " + String.join(", ", lost) + " left holding bundles";
    LOG.info("rescheduling placement group {}: {}", rec.displayName(), reason);
    work(rec, table.replace(row, rec.with(PlacementGroupState.RESCHEDULING, nodes, attempts, reason, clock.millis()))
        .thenCompose(ok -> ok.isPresent() ? TwoPhaseReservation.cancelAll(survivors, reserver)
            : java.util.concurrent.CompletableFuture.completedFuture(null)));
  }

  private void fail(PlacementGroupTable.Row row) {
    GroupRecord rec = row.rec();
    String reason = "not placed within its timeout of " + rec.timeoutMs() + " ms: " + rec.reason();
    LOG.info("placement group {} failed: {}", rec.displayName(), reason);
    List<TwoPhaseReservation.Part> held = new ArrayList<>();
    for (int i = 0; i < rec.size(); i++) {
      if (rec.nodes().get(i) != null) {
        held.add(new TwoPhaseReservation.Part(new BundleHost.Key(rec.groupId(), i), rec.nodes().get(i),
            rec.attempts().get(i), rec.bundle(i)));
      }
    }
    List<String> none = Collections.nCopies(rec.size(), null);
    work(rec, table.replace(row, rec.with(PlacementGroupState.FAILED, none, none, reason, rec.waitingSinceMs()))
        .thenCompose(ok -> ok.isPresent() ? TwoPhaseReservation.cancelAll(held, reserver)
            : java.util.concurrent.CompletableFuture.completedFuture(null)));
  }

  private void place(PlacementGroupTable.Row row) {
    GroupRecord rec = row.rec();
    BundlePlacement p = BundleScheduler.place(new BundleRequest(rec.resources(), rec.strategy(), rec.nodes()),
        view.get());
    if (!(p instanceof BundlePlacement.Assigned assigned)) {
      String reason = p instanceof BundlePlacement.Pending pend ? pend.reason()
          : "infeasible now, waiting for nodes: " + ((BundlePlacement.Infeasible) p).reason();
      if (!Objects.equals(reason, rec.reason())) {
        work(rec, table.replace(row, rec.withReason(reason)));
      }
      return;
    }
    List<TwoPhaseReservation.Part> parts = new ArrayList<>();
    List<String> nodes = new ArrayList<>(assigned.nodeIds());
    List<String> attempts = new ArrayList<>(rec.attempts());
    for (int i = 0; i < rec.size(); i++) {
      if (rec.nodes().get(i) == null) {
        String attempt = Ids.newId();
        attempts.set(i, attempt);
        parts.add(new TwoPhaseReservation.Part(new BundleHost.Key(rec.groupId(), i), nodes.get(i), attempt,
            rec.bundle(i)));
      }
    }
    work(rec, TwoPhaseReservation.reserve(parts, reserver).thenCompose(outcome -> {
      if (!outcome.reserved()) {
        // The view was stale or a GPU fragmented: try again after a pause, not at every row change.
        context.runOnContext(v -> notBefore.put(rec.groupId(), System.nanoTime() + REFUSED_BACKOFF_MS * 1_000_000));
        String reason = "a node refused its bundle: " + outcome.reason();
        return Objects.equals(reason, rec.reason()) ? java.util.concurrent.CompletableFuture.completedFuture(null)
            : table.replace(row, rec.withReason(reason)).thenApply(x -> null);
      }
      return table.replace(row, rec.with(PlacementGroupState.CREATED, nodes, attempts, null, rec.waitingSinceMs()))
          .thenCompose(written -> {
            if (written.isPresent()) {
              LOG.info("placement group {} created on {}", rec.displayName(), nodes);
              return java.util.concurrent.CompletableFuture.completedFuture(null);
            }
            // Removed or changed meanwhile: what this attempt reserved must not stay behind.
            return TwoPhaseReservation.cancelAll(parts, reserver);
          });
    }));
  }
}
