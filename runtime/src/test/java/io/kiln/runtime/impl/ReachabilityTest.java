package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.NodeUnreachableException;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which nodes are unreachable, from the event bus's connections as {@link BusLinks} reports them: a closed
 * connection fails the actor calls in flight to its node (not the node-agent requests: those wait for membership),
 * marks the node unreachable while no other connection to it is open, and only an answered ping (never a new
 * connection) makes it reachable again; membership leaving forgets it.
 */
class ReachabilityTest {

  private static final SocketAddress B_BUS = SocketAddress.inetSocketAddress(5555, "127.0.0.1");
  private static final SocketAddress C_BUS = SocketAddress.inetSocketAddress(5556, "127.0.0.1");

  private InMemoryCluster cluster;
  private Vertx vertx;
  private CallTracker calls;
  private Reachability reach;
  private final ConcurrentLinkedQueue<CompletableFuture<Void>> pings = new ConcurrentLinkedQueue<>();
  private final AtomicLong clock = new AtomicLong();

  @BeforeEach
  void start() {
    cluster = new InMemoryCluster();
    ClusterBackend a = cluster.join("a");
    cluster.join("b");
    cluster.join("c");
    NodeTable table = new NodeTable(a);
    table.publish(row("b", "127.0.0.1:5555"));
    table.publish(row("c", "127.0.0.1:5556"));
    vertx = Vertx.vertx();
    calls = new CallTracker("a");
    reach = new Reachability("a", vertx, table, calls, a::members, clock::get);
    reach.pingWith(node -> {
      CompletableFuture<Void> f = new CompletableFuture<>();
      pings.add(f);
      return f;
    });
  }

  @AfterEach
  void stop() {
    vertx.close().toCompletionStage().toCompletableFuture().join();
  }

  private static NodeRecord row(String id, String bus) {
    return new NodeRecord(id, "127.0.0.1", Map.of(), Map.of(), Map.of(), Map.of(Reachability.BUS_SERVICE, bus), 0, 1);
  }

  private CompletableFuture<String> actorCall(String node) {
    CompletableFuture<String> f = new CompletableFuture<>();
    calls.track(node, f, n -> new ActorDiedException("x", "died with " + n),
        (n, why) -> new NodeUnreachableException(n, n + " unreachable: " + why));
    return f;
  }

  private CompletableFuture<String> agentRequest(String node) {
    CompletableFuture<String> f = new CompletableFuture<>();
    calls.track(node, f, n -> new NodeDiedException(n + " left"));
    return f;
  }

  @Test
  void aClosedConnectionFailsTheActorCallsInFlightToItsNodeAtOnceAndMarksItUnreachable() {
    BusLinks.Link link = new BusLinks.Link(B_BUS);
    reach.opened(link);
    CompletableFuture<String> call = actorCall("b");
    CompletableFuture<String> other = actorCall("c");
    CompletableFuture<String> agent = agentRequest("b");
    assertThat(reach.unreachable("b")).isFalse();

    reach.closed(link);

    assertThat(call).isCompletedExceptionally();
    assertThat(call.handle((v, e) -> e).join()).isInstanceOf(NodeUnreachableException.class)
        .hasMessageContaining("b unreachable: its event-bus connection (" + link + ") closed");
    assertThat(((NodeUnreachableException) call.handle((v, e) -> e).join()).nodeId()).isEqualTo("b");
    assertThat(other).as("a call to another node").isNotDone();
    assertThat(agent).as("a node-agent request waits for membership").isNotDone();
    assertThat(reach.unreachable("b")).isTrue();
    assertThat(reach.unreachable("c")).isFalse();
    clock.addAndGet(42_000_000L);
    assertThat(reach.why("b")).contains("closed").endsWith("42 ms ago");

    // Membership has the last word: the node left, the agent request fails as dead, the mark is dropped.
    calls.nodeDied("b");
    reach.nodeLeft("b");
    assertThat(agent.handle((v, e) -> e).join()).isInstanceOf(NodeDiedException.class);
    assertThat(reach.unreachable("b")).isFalse();
  }

  @Test
  void withAnotherConnectionOpenTheCallsInFlightFailButTheNodeStaysReachable() {
    BusLinks.Link old = new BusLinks.Link(B_BUS);
    BusLinks.Link fresh = new BusLinks.Link(B_BUS);
    reach.opened(old);
    reach.opened(fresh);
    CompletableFuture<String> call = actorCall("b");

    reach.closed(old);

    assertThat(call).as("what went out on the closed connection is never answered").isCompletedExceptionally();
    assertThat(reach.unreachable("b")).isFalse();
    reach.closed(fresh);
    assertThat(reach.unreachable("b")).isTrue();
  }

  @Test
  void onlyAnAnsweredPingMakesTheNodeReachableAgainNotANewConnection() {
    BusLinks.Link link = new BusLinks.Link(B_BUS);
    reach.opened(link);
    reach.closed(link);
    assertThat(reach.unreachable("b")).isTrue();

    // A hung process's kernel still accepts connections: that proves nothing.
    reach.opened(new BusLinks.Link(B_BUS));
    assertThat(reach.unreachable("b")).isTrue();

    await().atMost(Duration.ofSeconds(5)).until(() -> !pings.isEmpty());
    pings.poll().completeExceptionally(new io.kiln.runtime.CallTimeoutException("no answer"));
    assertThat(reach.unreachable("b")).isTrue();
    // Pinged again after the pause; this one is answered.
    await().atMost(Duration.ofSeconds(5)).until(() -> !pings.isEmpty());
    pings.poll().complete(null);
    assertThat(reach.unreachable("b")).isFalse();
    CompletableFuture<String> call = actorCall("b");
    assertThat(call).isNotDone();
  }

  @Test
  void connectionsToUnknownAddressesNonMembersOrAfterStopChangeNothing() {
    BusLinks.Link stranger = new BusLinks.Link(SocketAddress.inetSocketAddress(6000, "127.0.0.1"));
    CompletableFuture<String> call = actorCall("b");
    reach.opened(stranger);
    reach.closed(stranger);
    assertThat(call).isNotDone();

    cluster.crash("c");
    BusLinks.Link toC = new BusLinks.Link(C_BUS);
    reach.opened(toC);
    reach.closed(toC);
    assertThat(reach.unreachable("c")).as("c left: membership fails its calls").isFalse();

    reach.stop();
    BusLinks.Link toB = new BusLinks.Link(B_BUS);
    reach.opened(toB);
    reach.closed(toB);
    assertThat(call).as("this node is going: its own connections closing say nothing").isNotDone();
    assertThat(reach.unreachable("b")).isFalse();
  }

  @Test
  void theNodeIsMatchedByItsAdvertisedIpAndPort() {
    CompletableFuture<String> call = actorCall("b");
    BusLinks.Link samePortOtherHost = new BusLinks.Link(SocketAddress.inetSocketAddress(5555, "127.0.0.2"));
    reach.opened(samePortOtherHost);
    reach.closed(samePortOtherHost);
    assertThat(call).isNotDone();
    BusLinks.Link byName = new BusLinks.Link(SocketAddress.inetSocketAddress(5555, "127.0.0.1"));
    reach.opened(byName);
    reach.closed(byName);
    assertThat(call).isCompletedExceptionally();
  }
}
