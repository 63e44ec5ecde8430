package io.kiln.runtime.cluster;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeUnreachableException;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.cluster.Prober.Counter;
import io.kiln.runtime.cluster.Prober.Sleeper;
import io.kiln.runtime.testing.NodeMain;
import io.kiln.runtime.testing.NodeProcesses;
import io.kiln.testkit.KilnProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The configured bound on noticing a silent node ({@link ClusterOptions#busFailureDetect()}), across processes: a
 * node frozen with SIGSTOP keeps its sockets open (its kernel even accepts new connections) and answers nothing, as
 * a hung or cut-off host does, so no connection closes by itself. The driver (this JVM, bound 1 s, membership
 * timeout 10 s) must fail its call in flight to the frozen node with {@link NodeUnreachableException} within about
 * the bound, fail new calls to it at once, keep it a member, and, once it resumes, call it again: the same actor,
 * its state intact, the node never having left.
 */
class BusFailureDetectIT {

  static final Duration JOIN = Duration.ofSeconds(120);
  static final Duration DETECT = Duration.ofSeconds(1);
  /** Membership's timeout, far above the freeze: this test is about the bus alone. */
  static final Duration MEMBERSHIP = Duration.ofSeconds(10);
  /** The bound plus a loaded machine's delay in running the ping's timers and the test's own thread. */
  static final Duration DETECT_SLACK = Duration.ofSeconds(2);

  NodeProcesses nodes;
  KilnRuntime driver;

  @AfterEach
  void stop() throws Exception {
    if (driver != null) {
      driver.close();
    }
    if (nodes != null) {
      nodes.close();
    }
  }

  @Test
  void aFrozenNodeIsUnreachableWithinTheBoundThenServesAgainWithoutHavingLeft() throws Exception {
    String name = "it-" + UUID.randomUUID();
    nodes = new NodeProcesses(Path.of("target", "node-logs", "BusFailureDetectIT"));
    String timeout = Long.toString(MEMBERSHIP.toMillis());
    int headPort = NodeProcesses.await(nodes.start(NodeMain.class.getName(), "n1", "--cluster", name,
        "--resources", "CPU=2", "--failure-timeout-ms", timeout), JOIN);
    String join = "127.0.0.1:" + headPort;
    KilnProcess n2 = nodes.start(NodeMain.class.getName(), "n2", "--cluster", name, "--join", join,
        "--resources", "CPU=2", "--failure-timeout-ms", timeout);
    NodeProcesses.await(n2, JOIN);
    driver = result(KilnCluster.join(new NodeOptions("driver", "127.0.0.1", Resources.NONE, Map.of()),
        new ClusterOptions(name, "127.0.0.1", 0, List.of(join), Duration.ofSeconds(1), MEMBERSHIP, null)
            .withBusFailureDetect(DETECT)), JOIN);
    List<String> left = new CopyOnWriteArrayList<>();
    driver.addMembershipListener(new MembershipListener() {
      @Override
      public void memberLeft(String memberId) {
        left.add(memberId);
      }
    });
    await().atMost(Duration.ofSeconds(60)).until(() -> driver.clusterView().aliveNodes().size() == 3);

    ActorHandle<Counter> counter = result(driver.actor(Counter::new).strategy(SchedulingStrategy.onNode("n2")).remote());
    ActorHandle<Sleeper> sleeper = result(driver.actor(Sleeper::new).strategy(SchedulingStrategy.onNode("n2")).remote());
    assertThat(result(counter.call(Counter::add, 5))).isEqualTo(5);
    CompletionStage<String> inFlight = sleeper.withTimeout(Duration.ofMinutes(5)).call(Sleeper::sleep, 4_000L);

    long frozen = System.nanoTime();
    nodes.signal("n2", "STOP");
    Throwable t;
    long failedAfterMs;
    try {
      t = failure(inFlight, Duration.ofSeconds(30));
      failedAfterMs = (System.nanoTime() - frozen) / 1_000_000;
      long notSentStart = System.nanoTime();
      Throwable notSent = failure(counter.call(Counter::get), Duration.ofSeconds(30));
      long notSentMs = (System.nanoTime() - notSentStart) / 1_000_000;
      System.out.printf("BusFailureDetectIT: call in flight failed %d ms after SIGSTOP (bound %d ms); a new call "
          + "failed in %d ms: %s%n", failedAfterMs, DETECT.toMillis(), notSentMs, notSent.getMessage());
      assertThat(notSent).isInstanceOf(NodeUnreachableException.class).hasMessageContaining("not called");
      assertThat(notSentMs).as("a call to an unreachable node is not sent").isLessThan(1_000);
      assertThat(driver.members()).as("the bus's verdict is not membership's").contains("n2");
    } finally {
      nodes.signal("n2", "CONT");
    }
    assertThat(t).isInstanceOf(NodeUnreachableException.class).hasMessageContaining("n2")
        .hasMessageContaining("may or may not have run");
    assertThat(failedAfterMs).isLessThan(DETECT.plus(DETECT_SLACK).toMillis());

    // Resumed: it answers pings again, so calls go through again; the same actor, its state intact.
    long resumed = System.nanoTime();
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> result(counter.call(Counter::get)) == 5);
    System.out.printf("BusFailureDetectIT: calls to n2 served again %d ms after SIGCONT%n",
        (System.nanoTime() - resumed) / 1_000_000);
    assertThat(result(counter.call(Counter::add, 1))).isEqualTo(6);
    assertThat(left).as("n2 never left the cluster").doesNotContain("n2");
    assertThat(driver.members()).contains("n2");
  }
}
