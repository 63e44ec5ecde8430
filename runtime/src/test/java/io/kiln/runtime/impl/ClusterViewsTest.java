package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.scheduling.Placement;
import io.kiln.runtime.scheduling.PlacementRequest;
import io.kiln.runtime.scheduling.Scheduler;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The node's placements come from its index, kept current by row and membership events; they must equal
 * the plain scan over the view built afresh ({@link ClusterViews#clusterView()}), after every kind of
 * change, once the events have arrived.
 */
class ClusterViewsTest {

  private static final List<PlacementRequest> REQUESTS = List.of(
      PlacementRequest.of(Resources.NONE, SchedulingStrategy.DEFAULT),
      PlacementRequest.of(Resources.cpu(1), SchedulingStrategy.DEFAULT),
      PlacementRequest.of(Resources.cpu(3), SchedulingStrategy.DEFAULT),
      PlacementRequest.of(Resources.gpu(1), SchedulingStrategy.DEFAULT),
      new PlacementRequest(Resources.NONE, SchedulingStrategy.SPREAD, 1),
      new PlacementRequest(Resources.cpu(1), SchedulingStrategy.SPREAD, 2),
      PlacementRequest.of(Resources.cpu(1), SchedulingStrategy.nodeAffinity("c", true)),
      PlacementRequest.of(Resources.cpu(1), SchedulingStrategy.onNode("c")),
      PlacementRequest.of(Resources.cpu(1), SchedulingStrategy.onNode("d")));

  private InMemoryCluster cluster;
  private ResourceLedger ledger;
  private ClusterViews views;
  private final Map<String, NodeTable> tables = new HashMap<>();
  private final Map<String, Long> versions = new HashMap<>();

  @BeforeEach
  void start() {
    cluster = new InMemoryCluster();
    ClusterBackend a = cluster.join("a");
    NodeTable table = new NodeTable(a);
    ledger = new ResourceLedger(Resources.cpu(4));
    views = new ClusterViews(new NodeOptions("a", "127.0.0.1", Resources.cpu(4), Map.of()), table, ledger,
        a::members);
    a.addMembershipListener(new MembershipListener() {
      @Override
      public void memberJoined(String memberId) {
        views.nodeChanged(memberId);
      }

      @Override
      public void memberLeft(String memberId) {
        views.nodeChanged(memberId);
      }
    });
    table.load().toCompletableFuture().join();
    views.resync();
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  @Test
  void placementsFollowRowsMembershipAndTheLocalLedger() {
    join("b", Resources.cpu(8), Resources.cpu(7));
    join("c", Resources.cpu(8).withGpu(2), Resources.cpu(8).withGpu(2));
    join("d", Resources.cpu(2), Resources.cpu(1));
    awaitAgreement(p -> ranked(p, 0).contains("b") && ranked(p, 0).contains("c") && ranked(p, 0).contains("d"));

    publish("b", Resources.cpu(8), Resources.cpu(2)); // a row changes: b now too full for 3 CPUs
    awaitAgreement(p -> !ranked(p, 2).contains("b"));

    cluster.crash("c"); // a member dies: its row stays, dead
    awaitAgreement(p -> p.get(7) instanceof Placement.Infeasible inf && inf.reason().equals("node c is dead"));

    tables.get("d").remove("d").toCompletableFuture().join(); // a row goes
    awaitAgreement(p -> p.get(8) instanceof Placement.Infeasible inf && inf.reason().equals("unknown node d"));

    Allocation held = ledger.tryReserve(Resources.cpu(3)).orElseThrow(); // the local ledger moves, no event
    awaitAgreement(p -> !ranked(p, 2).contains("a"));
    ledger.release(held);
    awaitAgreement(p -> ranked(p, 2).contains("a"));

    views.stopped();
    awaitAgreement(p -> !ranked(p, 0).contains("a"));
  }

  @Test
  void aRowSeenBeforeItsMemberIsAliveOnceTheMemberJoins() {
    tables.put("e", new NodeTable(cluster.join("writer")));
    publish("e", Resources.cpu(8), Resources.cpu(8)); // the row of a node that is not a member (yet)
    awaitAgreement(p -> !ranked(p, 1).contains("e")
        && views.clusterView().node("e").filter(n -> !n.alive()).isPresent());

    cluster.join("e");
    awaitAgreement(p -> ranked(p, 1).contains("e"));
  }

  private void join(String id, Resources total, Resources available) {
    tables.put(id, new NodeTable(cluster.join(id)));
    publish(id, total, available);
  }

  private void publish(String id, Resources total, Resources available) {
    long version = versions.merge(id, 1L, Long::sum);
    tables.get(id).publish(new NodeRecord(id, "127.0.0.1", total.units(), available.units(), Map.of(),
        Map.of(), 0, version)).toCompletableFuture().join();
  }

  private static List<String> ranked(List<Placement> placements, int i) {
    return placements.get(i) instanceof Placement.Ranked r ? r.nodeIds() : List.of();
  }

  /** Waits until the index agrees with the fresh view's scan on every request and {@code state} holds. */
  private void awaitAgreement(java.util.function.Predicate<List<Placement>> state) {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      List<Placement> indexed = new ArrayList<>();
      List<Placement> scanned = new ArrayList<>();
      for (PlacementRequest r : REQUESTS) {
        indexed.add(views.place(r));
        scanned.add(Scheduler.place(r, views.clusterView()));
      }
      assertThat(indexed).isEqualTo(scanned);
      assertThat(state).as("the change is seen: %s", indexed).accepts(indexed);
    });
  }
}
