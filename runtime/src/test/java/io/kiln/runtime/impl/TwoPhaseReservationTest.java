package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.Resources;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * All-or-nothing reservation over real node ledgers and bundle hosts: one node refusing its prepare, or a
 * commit failing, leaves no bundle and no reserved resource anywhere.
 */
class TwoPhaseReservationTest {

  private final InMemoryCluster cluster = new InMemoryCluster();
  private final PlacementGroupTable table = new PlacementGroupTable(cluster.join("t").map(GroupRecord.MAP),
      cluster.join("t2").map(GroupRecord.NAMES));
  private final AtomicLong nanos = new AtomicLong();
  private final Map<String, ResourceLedger> ledgers = new LinkedHashMap<>();
  private final Map<String, BundleHost> hosts = new LinkedHashMap<>();

  @AfterEach
  void close() {
    cluster.close();
  }

  private void node(String id, Resources total) {
    ResourceLedger ledger = new ResourceLedger(total);
    ledgers.put(id, ledger);
    hosts.put(id, new BundleHost(id, ledger, new LocalActors(), table, nanos::get, () -> { }, () -> { }));
  }

  /** The hosts called directly, as their agents would on a message. */
  private final TwoPhaseReservation.Reserver direct = new TwoPhaseReservation.Reserver() {
    @Override
    public CompletionStage<Void> prepare(String nodeId, BundleHost.Key key, String attempt, Resources resources) {
      String refused = hosts.get(nodeId).prepare(key, attempt, resources);
      return refused == null ? CompletableFuture.completedFuture(null)
          : CompletableFuture.failedFuture(new PlacementRefusedException(refused));
    }

    @Override
    public CompletionStage<Void> commit(String nodeId, BundleHost.Key key, String attempt) {
      return hosts.get(nodeId).commit(key, attempt) ? CompletableFuture.completedFuture(null)
          : CompletableFuture.failedFuture(new PlacementRefusedException(key + " not prepared"));
    }

    @Override
    public CompletionStage<Void> cancel(String nodeId, BundleHost.Key key, String attempt) {
      hosts.get(nodeId).cancel(key.groupId(), key.index(), attempt, "cancelled");
      return CompletableFuture.completedFuture(null);
    }
  };

  private static List<TwoPhaseReservation.Part> parts(String... nodes) {
    List<TwoPhaseReservation.Part> out = new java.util.ArrayList<>();
    for (int i = 0; i < nodes.length; i++) {
      out.add(new TwoPhaseReservation.Part(new BundleHost.Key("g", i), nodes[i], "a" + i, Resources.cpu(2)));
    }
    return out;
  }

  private void assertNothingHeld() {
    ledgers.forEach((id, l) -> assertThat(l.available()).as(id).isEqualTo(l.total()));
    hosts.forEach((id, h) -> assertThat(h.size()).as(id).isZero());
  }

  @Test
  void oneLedgerRefusingItsPrepareLeavesNoReservationAnywhere() {
    node("a", Resources.cpu(4));
    node("b", Resources.cpu(4));
    node("c", Resources.cpu(1)); // refuses a 2-CPU bundle
    node("d", Resources.cpu(4));
    TwoPhaseReservation.Outcome o = result(TwoPhaseReservation.reserve(parts("a", "b", "c", "d"), direct));
    assertThat(o.reserved()).isFalse();
    assertThat(o.reason()).contains("node c has {CPU: 1} available").contains("bundle 2 of placement group g");
    assertNothingHeld();
  }

  @Test
  void aCommitFailingCancelsTheBundlesAlreadyCommitted() {
    node("a", Resources.cpu(4));
    node("b", Resources.cpu(4));
    TwoPhaseReservation.Reserver expiresOnB = new TwoPhaseReservation.Reserver() {
      @Override
      public CompletionStage<Void> prepare(String nodeId, BundleHost.Key key, String attempt, Resources resources) {
        return direct.prepare(nodeId, key, attempt, resources);
      }

      @Override
      public CompletionStage<Void> commit(String nodeId, BundleHost.Key key, String attempt) {
        if (nodeId.equals("b")) {
          hosts.get("b").cancel("g", null, null, "expired"); // as if b's prepare had expired
        }
        return direct.commit(nodeId, key, attempt);
      }

      @Override
      public CompletionStage<Void> cancel(String nodeId, BundleHost.Key key, String attempt) {
        return direct.cancel(nodeId, key, attempt);
      }
    };
    TwoPhaseReservation.Outcome o = result(TwoPhaseReservation.reserve(parts("a", "b"), expiresOnB));
    assertThat(o.reserved()).isFalse();
    assertNothingHeld();
  }

  @Test
  void allPreparedAreCommittedAndBundlesServeReservationsFromTheirOwnResources() {
    node("a", Resources.cpu(4).withGpu(2));
    node("b", Resources.cpu(4));
    List<TwoPhaseReservation.Part> parts = List.of(
        new TwoPhaseReservation.Part(new BundleHost.Key("g", 0), "a", "x", Resources.cpu(1).withGpu(1)),
        new TwoPhaseReservation.Part(new BundleHost.Key("g", 1), "b", "y", Resources.cpu(2)));
    assertThat(result(TwoPhaseReservation.reserve(parts, direct)).reserved()).isTrue();
    assertThat(ledgers.get("a").available()).isEqualTo(Resources.cpu(3).withGpu(1));
    String[] why = new String[1];
    var inBundle = hosts.get("a").reserve(new io.kiln.runtime.SchedulingStrategy.InPlacementGroup("g", 0),
        Resources.gpu(1), why);
    assertThat(inBundle).isPresent();
    assertThat(inBundle.get().gpuIndices()).containsExactly(0);
    // The node ledger did not pay again; the bundle is now out of GPU.
    assertThat(ledgers.get("a").available()).isEqualTo(Resources.cpu(3).withGpu(1));
    assertThat(hosts.get("a").reserve(new io.kiln.runtime.SchedulingStrategy.InPlacementGroup("g", 0),
        Resources.gpu(1), why)).isEmpty();
    assertThat(why[0]).contains("has no room");
    assertThat(hosts.get("a").release(inBundle.get())).isTrue();
    result(TwoPhaseReservation.cancelAll(parts, direct));
    assertNothingHeld();
  }

  @Test
  void aPreparedBundleNeverCommittedExpiresOnItsNode() {
    node("a", Resources.cpu(4));
    assertThat(hosts.get("a").prepare(new BundleHost.Key("g", 0), "x", Resources.cpu(2))).isNull();
    hosts.get("a").sweep();
    assertThat(hosts.get("a").size()).isEqualTo(1);
    nanos.addAndGet((BundleHost.PREPARE_TTL_MS + 1) * 1_000_000);
    hosts.get("a").sweep();
    assertNothingHeld();
  }
}
