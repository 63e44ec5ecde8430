package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.testing.TestNodes;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class TaskContextTest {

  static LocalCluster cluster;
  static KilnRuntime a;
  static KilnRuntime b;

  @BeforeAll
  static void start() {
    cluster = LocalCluster.create();
    a = TestNodes.start(cluster, "ctx-a", Resources.cpu(2));
    b = TestNodes.start(cluster, "ctx-b", Resources.cpu(2).with("slot_b", 1));
    // Each node learns of the other through the node table, a moment after start: place nothing before.
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
        a.clusterView().aliveNodes().size() == 2 && b.clusterView().aliveNodes().size() == 2);
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  /** Where the task ran, as its context and its context's runtime see it, and what it was given. */
  static List<String> whereAmI() {
    TaskContext ctx = TaskContext.current();
    return List.of(ctx.nodeId(), ctx.runtime().nodeId(), ctx.taskId(), ctx.allocation().resources().toString());
  }

  static String noContextAfterwards() {
    return "done";
  }

  @Test
  void aTaskSeesTheNodeItWasPlacedOn() {
    List<String> onB = result(a.task(TaskContextTest::whereAmI).strategy(SchedulingStrategy.onNode("ctx-b"))
        .resources(Resources.of("slot_b", 1)).remote());
    assertThat(onB.get(0)).isEqualTo("ctx-b");
    assertThat(onB.get(1)).isEqualTo("ctx-b");
    assertThat(onB.get(2)).isNotBlank();
    assertThat(onB.get(3)).contains("slot_b");
    List<String> onA = result(b.task(TaskContextTest::whereAmI).strategy(SchedulingStrategy.onNode("ctx-a")).remote());
    assertThat(onA.get(0)).isEqualTo("ctx-a");
    assertThat(onA.get(1)).isEqualTo("ctx-a");
  }

  @Test
  void outsideATaskThereIsNoContext() {
    assertThatThrownBy(TaskContext::current).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not inside a task");
    assertThat(failure(a.task(TaskContextTest::whereAmI).strategy(SchedulingStrategy.onNode("nowhere")).remote()))
        .isInstanceOf(InfeasibleResourcesException.class);
  }
}
