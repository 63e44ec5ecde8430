package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A live named actor whose registry entry went (as when the other side of a partition freed the names of a node it
 * saw die, and the heal's merge has not given them back yet) keeps its name: a get-or-create of that name gets it
 * rather than a second one, a member joining makes its node put the entry back, and if another actor took the name
 * meanwhile, the registry's holder wins and this one dies, its calls failing with {@link ActorDiedException}.
 */
@Tag("slow")
class HeldNamesTest {

  /** An actor that says which incarnation it is. */
  public static final class Named {
    public String where() {
      return "here";
    }
  }

  static final String KEY = ActorRecord.key("default", "held");
  static final Duration WAIT = Duration.ofSeconds(30);

  LocalCluster cluster;
  KilnRuntime a;
  KilnRuntime b;

  @BeforeEach
  void twoNodes() {
    cluster = LocalCluster.create();
    a = result(cluster.startNode(new NodeOptions("a", "127.0.0.1", Resources.cpu(4), Map.of())));
    b = result(cluster.startNode(new NodeOptions("b", "127.0.0.1", Resources.cpu(4), Map.of())));
    // a places on b once b's row reached it
    await().atMost(WAIT).until(() -> a.clusterView().aliveNodes().stream().anyMatch(n -> n.nodeId().equals("b")));
  }

  @AfterEach
  void close() {
    cluster.close();
  }

  ActorHandle<Named> onB() {
    return result(a.actor(Named::new).name("held").getIfExists().detached()
        .strategy(SchedulingStrategy.onNode("b")).remote());
  }

  /** The registry loses the entry, as the other side's janitor frees it while the node is cut off. */
  void freeTheEntry() {
    result(((RuntimeImpl) a).backend().map(ActorRegistry.MAP).remove(KEY));
    assertThat(registered()).isEmpty();
  }

  Optional<String> registered() {
    return result(((RuntimeImpl) a).backend().map(ActorRegistry.MAP).get(KEY)).map(j -> ActorRegistry.decode(j).actorId());
  }

  static List<String> liveHere(KilnRuntime node) {
    return node.localActors().stream().filter(i -> "held".equals(i.name()) && i.state() == ActorState.ALIVE)
        .map(ActorInfo::actorId).toList();
  }

  @Test
  void aGetOrCreateOfANameItsLiveActorStillHoldsGetsThatActorNotASecondOne() {
    ActorHandle<Named> first = onB();
    freeTheEntry();

    ActorHandle<Named> again = onB();

    assertThat(again.actorId()).isEqualTo(first.actorId());
    assertThat(liveHere(b)).containsExactly(first.actorId());
    assertThat(registered()).contains(first.actorId());
    assertThat(result(again.call(Named::where))).isEqualTo("here");
  }

  @Test
  void onItsOwnNodeALookupFindsALiveActorWhoseEntryTheRegistryLost() {
    ActorHandle<Named> first = onB();
    freeTheEntry();

    ActorHandle<Named> found = result(b.getActor("default", "held", Named.class));

    assertThat(found.actorId()).isEqualTo(first.actorId());
    assertThat(result(found.call(Named::where))).isEqualTo("here");
    assertThat(failure(a.getActor("default", "held", Named.class))).as("elsewhere the registry is the authority")
        .isInstanceOf(io.kiln.runtime.ActorNotFoundException.class);
  }

  @Test
  void aMemberJoiningMakesANodePutBackTheEntriesOfItsLiveActors() {
    ActorHandle<Named> first = onB();
    freeTheEntry();

    result(cluster.startNode(new NodeOptions("c", "127.0.0.1", Resources.cpu(1), Map.of())));

    await().atMost(WAIT).until(() -> registered().equals(Optional.of(first.actorId())));
    assertThat(liveHere(b)).containsExactly(first.actorId());
    assertThat(result(first.call(Named::where))).isEqualTo("here");
  }

  @Test
  void anotherCreatorsPendingClaimIsWaitedOutNotObeyed() {
    ActorHandle<Named> first = onB();
    freeTheEntry();
    // A creator's claim, in flight when the heal shows (the leader asking for a manager it sees missing).
    ActorRecord claim = new ActorRecord("claimant", "default", "held", Named.class.getName(), null, ActorState.PENDING,
        io.kiln.runtime.Lifetime.DETACHED, "a", "a", null, 0, null, true, 0, null, 0);
    String claimJson = ActorRegistry.encode(claim);
    assertThat(result(((RuntimeImpl) a).backend().map(ActorRegistry.MAP).putIfAbsent(KEY, claimJson))).isEmpty();

    result(cluster.startNode(new NodeOptions("c", "127.0.0.1", Resources.cpu(1), Map.of())));

    await().during(Duration.ofSeconds(1)).atMost(WAIT).until(() -> liveHere(b).equals(List.of(first.actorId())));
    // The creator gives up its claim: the entry goes back to the live actor.
    assertThat(result(((RuntimeImpl) a).backend().map(ActorRegistry.MAP).remove(KEY, claimJson))).isTrue();
    await().atMost(WAIT).until(() -> registered().equals(Optional.of(first.actorId())));
    assertThat(liveHere(b)).containsExactly(first.actorId());
  }

  @Test
  void whenAnotherActorTookTheNameTheRegistrysHolderWinsAndTheOtherDiesFailingItsCalls() {
    ActorHandle<Named> loser = onB();
    freeTheEntry();
    // The other side created the name anew meanwhile (on its own node).
    ActorHandle<Named> winner = result(a.actor(Named::new).name("held").detached()
        .strategy(SchedulingStrategy.onNode("a")).remote());
    assertThat(liveHere(a)).containsExactly(winner.actorId());
    assertThat(liveHere(b)).containsExactly(loser.actorId()); // two of one name: what a healed partition can leave

    result(cluster.startNode(new NodeOptions("c", "127.0.0.1", Resources.cpu(1), Map.of())));

    await().atMost(WAIT).until(() -> liveHere(b).isEmpty());
    assertThat(registered()).contains(winner.actorId());
    assertThat(liveHere(a)).containsExactly(winner.actorId());
    assertThat(failure(loser.call(Named::where))).isInstanceOf(ActorDiedException.class);
    assertThat(result(winner.call(Named::where))).isEqualTo("here");
    assertThat(b.localActors().stream().filter(i -> i.actorId().equals(loser.actorId())).findFirst()
        .map(ActorInfo::deathCause)).hasValueSatisfying(c -> assertThat(c).contains("partition"));
  }
}
