package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.gateway.impl.Router.Reason;
import io.kiln.gateway.impl.Router.Route;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

class RouterTest {

  private static final Duration RETRY = Duration.ofSeconds(3);

  /** Plays back fixed draws so each choice of power-of-two-choices is known. */
  private static final class Scripted implements RandomGenerator {
    private final Deque<Integer> draws = new ArrayDeque<>();

    Scripted(int... values) {
      for (int v : values) {
        draws.add(v);
      }
    }

    @Override
    public int nextInt(int bound) {
      int v = draws.remove();
      assertThat(v).isBetween(0, bound - 1);
      return v;
    }

    @Override
    public long nextLong() {
      throw new AssertionError("the router should only draw bounded ints");
    }
  }

  private static PoolEndpoint pool(String node, boolean local, int queue, int inFlight) {
    return new PoolEndpoint(node, local, true, queue, inFlight, 10);
  }

  private static Router router(int... draws) {
    return new Router(new Scripted(draws), RETRY);
  }

  @Test
  void localPoolWithRoomWins() {
    List<PoolEndpoint> pools = List.of(pool("b", false, 0, 0), pool("a", true, 9, 5));
    Route r = router().route("m", pools, null);
    assertThat(r.target().nodeId()).isEqualTo("a");
    assertThat(r.reason()).isEqualTo(Reason.LOCAL);
  }

  @Test
  void fullLocalPoolSpillsToARemoteOne() {
    List<PoolEndpoint> pools = List.of(pool("a", true, 10, 0), pool("b", false, 3, 0));
    Route r = router().route("m", pools, null);
    assertThat(r.target().nodeId()).isEqualTo("b");
    assertThat(r.reason()).isEqualTo(Reason.SPILL);
  }

  @Test
  void withoutALocalPoolTwoChoicesPicksTheLessLoadedOfTheTwoDrawn() {
    List<PoolEndpoint> pools = List.of(pool("x", false, 5, 0), pool("y", false, 1, 1), pool("z", false, 0, 0));
    // Draws 0 then 0 → candidates x and y (the second draw skips the first index): y has load 2 < 5.
    Route r = router(0, 0).route("m", pools, null);
    assertThat(r.target().nodeId()).isEqualTo("y");
    assertThat(r.reason()).isEqualTo(Reason.BALANCED);
    // Draws 2 then 0 → z and x: z is idle.
    assertThat(router(2, 0).route("m", pools, null).target().nodeId()).isEqualTo("z");
    // Ties go to the first drawn.
    List<PoolEndpoint> even = List.of(pool("p", false, 1, 0), pool("q", false, 0, 1));
    assertThat(router(1, 0).route("m", even, null).target().nodeId()).isEqualTo("q");
  }

  @Test
  void twoChoicesNeverPicksTheMostLoadedOfThree() {
    List<PoolEndpoint> pools = List.of(pool("busy", false, 9, 9), pool("b", false, 1, 0), pool("c", false, 2, 0));
    Router router = new Router(new SplittableRandom(42), RETRY);
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < 3000; i++) {
      counts.merge(router.route("m", pools, null).target().nodeId(), 1, Integer::sum);
    }
    assertThat(counts).doesNotContainKey("busy").containsKeys("b", "c");
    assertThat(counts.get("b")).isGreaterThan(counts.get("c"));
  }

  @Test
  void notReadyAndFullPoolsAreNeverChosen() {
    List<PoolEndpoint> pools = List.of(new PoolEndpoint("down", false, false, 0, 0, 10), pool("full", false, 10, 0),
        pool("ok", false, 8, 8));
    for (int i = 0; i < 50; i++) {
      assertThat(new Router(new SplittableRandom(i), RETRY).route("m", pools, null).target().nodeId()).isEqualTo("ok");
    }
  }

  @Test
  void aHintPinsTheNodeEvenWhenTheLocalPoolHasRoom() {
    List<PoolEndpoint> pools = List.of(pool("a", true, 0, 0), pool("b", false, 7, 2));
    Route r = router().route("m", pools, "b");
    assertThat(r.target().nodeId()).isEqualTo("b");
    assertThat(r.reason()).isEqualTo(Reason.PINNED);
  }

  @Test
  void aHintIsHardWhenThePinnedNodeHasNoReadyPool() {
    List<PoolEndpoint> pools = List.of(pool("a", true, 0, 0), new PoolEndpoint("b", false, false, 0, 0, 10));
    assertThatThrownBy(() -> router().route("m", pools, "b"))
        .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE))
        .hasMessageContaining("node 'b'");
    assertThatThrownBy(() -> router().route("m", pools, "nowhere")).hasMessageContaining("node 'nowhere'");
  }

  @Test
  void aFullPinnedPoolIsACapacityError() {
    List<PoolEndpoint> pools = List.of(pool("a", true, 0, 0), pool("b", false, 10, 0));
    assertThatThrownBy(() -> router().route("m", pools, "b"))
        .isInstanceOfSatisfying(CapacityExceededException.class, e -> assertThat(e.retryAfter()).isEqualTo(RETRY))
        .hasMessageContaining("node 'b'");
  }

  @Test
  void noReadyPoolIsUnavailable() {
    assertThatThrownBy(() -> router().route("m", List.of(), null))
        .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE))
        .isNotInstanceOf(CapacityExceededException.class)
        .hasMessageContaining("no ready pool for model 'm'");
    List<PoolEndpoint> down = List.of(new PoolEndpoint("a", true, false, 0, 0, 10));
    assertThatThrownBy(() -> router().route("m", down, null)).hasMessageContaining("no ready pool");
  }

  @Test
  void allReadyPoolsFullIsACapacityErrorWithRetryAfter() {
    List<PoolEndpoint> pools = List.of(pool("a", true, 10, 0), pool("b", false, 10, 3));
    assertThatThrownBy(() -> router().route("m", pools, null))
        .isInstanceOfSatisfying(CapacityExceededException.class, e -> assertThat(e.retryAfter()).isEqualTo(RETRY))
        .hasMessageContaining("at capacity");
  }

  @Test
  void aSingleCandidateNeedsNoDraw() {
    // The scripted source has no draws: any call to it would fail the test.
    assertThat(router().route("m", List.of(pool("only", false, 0, 0)), null).target().nodeId()).isEqualTo("only");
  }

  private static PoolEndpoint leaving(String node, boolean local, int queue) {
    return new PoolEndpoint(node, local, false, queue, 0, 10, true);
  }

  @Test
  void aLeavingPoolGetsWorkOnlyWhenNoReadyPoolCanTakeIt() {
    Route elsewhere = router().route("m", List.of(leaving("a", true, 0), pool("b", false, 3, 0)), null);
    assertThat(elsewhere.target().nodeId()).isEqualTo("b");
    assertThat(elsewhere.reason()).isEqualTo(Reason.BALANCED);

    Route local = router().route("m", List.of(leaving("b", false, 0), leaving("a", true, 0)), null);
    assertThat(local.target().nodeId()).as("the only pools left: the local one serves").isEqualTo("a");
    Route remote = router().route("m", List.of(leaving("b", false, 0)), null);
    assertThat(remote.target().nodeId()).isEqualTo("b");
    assertThat(router().route("m", List.of(leaving("a", false, 0), pool("b", false, 0, 0)), "a").target().nodeId())
        .as("a hint naming a leaving node is served there").isEqualTo("a");

    assertThatThrownBy(() -> router().route("m", List.of(leaving("a", true, 10)), null))
        .isInstanceOf(CapacityExceededException.class);
    assertThatThrownBy(() -> router().route("m", List.of(new PoolEndpoint("a", true, false, 0, 0, 10)), null))
        .isInstanceOf(InferenceException.class).hasMessageContaining("no ready pool");
  }

  @Test
  void promptsSharingAPrefixFollowItsNodeWhileThatNodeIsNotClearlyBusier() {
    Router router = new Router(new SplittableRandom(1), RETRY);
    String system = "You are a support agent for Kiln. Answer in two sentences and name the docs page you used. ";
    long[] first = io.kiln.pools.PrefixAffinity.keys((system + "How do I deploy?").getBytes());
    long[] second = io.kiln.pools.PrefixAffinity.keys((system + "How do I scale?").getBytes());
    List<PoolEndpoint> remoteOnly = List.of(pool("a", false, 0, 0), pool("b", false, 0, 0));
    String holder = router.route("m", remoteOnly, null, null, first).target().nodeId();

    List<PoolEndpoint> localA = List.of(pool("a", holder.equals("b"), 1, 0), pool("b", holder.equals("a"), 0, 1));
    Route followed = router.route("m", localA, null, null, second);
    assertThat(followed.target().nodeId()).as("the prefix's node, not the local one").isEqualTo(holder);
    assertThat(followed.reason()).isEqualTo(Reason.PREFIX);

    List<PoolEndpoint> holderBusy = List.of(pool(holder, false, 6, 0), pool(holder.equals("a") ? "b" : "a", true, 0, 0));
    Route balanced = router.route("m", holderBusy, null, null, second);
    assertThat(balanced.reason()).as("6 queued against 0: past the slack").isEqualTo(Reason.LOCAL);
    assertThat(router.route("m", holderBusy, holder, null, second).reason()).as("a pin still wins")
        .isEqualTo(Reason.PINNED);
    assertThat(router.route("m", remoteOnly, null, null, io.kiln.pools.PrefixAffinity.keys("other".getBytes()))
        .reason()).isEqualTo(Reason.BALANCED);
  }

  @Test
  void aPrefixNoNodeHoldsGoesToTheLeastLoadedPoolNotTheLocalOneAndItsFollowersStayThere() {
    Router router = new Router(new SplittableRandom(7), RETRY);
    String system = "You are a careful translator from French into English; keep the register of the original. ";
    long[] first = io.kiln.pools.PrefixAffinity.keys((system + "Bonjour.").getBytes());
    long[] second = io.kiln.pools.PrefixAffinity.keys((system + "Merci beaucoup.").getBytes());
    // The local node already runs 3 streams, the other 1: a new prefix goes to the other.
    List<PoolEndpoint> localBusier = List.of(pool("a", true, 0, 3), pool("b", false, 0, 1));
    Route placed = router.route("m", localBusier, null, null, first);
    assertThat(placed.target().nodeId()).isEqualTo("b");
    assertThat(placed.reason()).isEqualTo(Reason.BALANCED);
    // Its follower goes there too, though the local node is now the less loaded (within the slack).
    List<PoolEndpoint> then = List.of(pool("a", true, 0, 0), pool("b", false, 0, 2));
    Route followed = router.route("m", then, null, null, second);
    assertThat(followed.target().nodeId()).isEqualTo("b");
    assertThat(followed.reason()).isEqualTo(Reason.PREFIX);
    // A tie keeps a new prefix local; a request without prefix keys is routed local-first as ever.
    long[] other = io.kiln.pools.PrefixAffinity.keys("Translate: the kiln is hot.".getBytes());
    assertThat(router.route("m", List.of(pool("a", true, 0, 1), pool("b", false, 0, 1)), null, null, other).reason())
        .isEqualTo(Reason.LOCAL);
    assertThat(router.route("m", localBusier, null).reason()).isEqualTo(Reason.LOCAL);
  }
}
