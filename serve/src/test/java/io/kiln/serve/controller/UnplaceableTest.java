package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.kiln.runtime.Resources;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Plan;
import io.kiln.serve.Problem;
import io.kiln.serve.ServeController;
import io.kiln.serve.ServeController.Unplaceable;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A deployment no node could ever host (by total resources, GPUs and labels) is refused by the apply at once,
 * naming what each node lacks and what a node would need, unless it waits for capacity; one that merely finds
 * resources busy, or whose nodes are away, is applied and waits, and its status says for what.
 */
@Tag("slow")
class UnplaceableTest {

  private static final String HUGE = "pool: {workers_per_node: 1, worker_resources: {CPU: 64}}\n";
  private static final String SMALL = "pool: {workers_per_node: 1, worker_resources: {CPU: 1}}\n";
  /** Far below the 60 s a worker waits for its placement, and far above what planning takes. */
  private static final Duration AT_ONCE = Duration.ofSeconds(1);

  /** One node of 2 CPUs, its controller refusing as Kiln's nodes do. */
  private static ServeNodes oneNode() {
    ServeNodes nodes = new ServeNodes(Unplaceable.REFUSE);
    nodes.start("solo", Resources.cpu(2), Map.of());
    return nodes;
  }

  private static DeploymentValidationException refusal(ServeNodes nodes, String yaml) {
    DeploymentValidationException e = catchThrowableOfType(DeploymentValidationException.class,
        () -> nodes.apply(yaml));
    assertThat(e).as("the apply is refused").isNotNull();
    return e;
  }

  @Test
  void aDeploymentNoNodeCanEverHostIsRefusedAtOnceNamingTheResourceAndTheNodesCapacity() {
    try (ServeNodes nodes = oneNode()) {
      nodes.dryRun(ServeNodes.identity("warm", "1", SMALL)); // loads the YAML reader, so the timing below is the apply's

      long start = System.nanoTime();
      DeploymentValidationException e = refusal(nodes, ServeNodes.identity("huge", "1", HUGE));
      Duration took = Duration.ofNanos(System.nanoTime() - start);

      assertThat(took).isLessThan(AT_ONCE);
      Problem p = e.problems().get(0);
      assertThat(e.problems()).hasSize(1);
      assertThat(p.file()).isEqualTo(ServeController.CLUSTER);
      assertThat(p.path()).isEqualTo("deployments[0].pool");
      assertThat(p.message()).isEqualTo("no node of this cluster can ever host a worker of huge@1 (solo: cannot host"
          + " one worker: each needs {CPU: 64}, node total {CPU: 2}); it needs a node with CPU \u2265 64. If such a"
          + " node will join, set pool.wait_for_capacity: true to apply it now and wait for that node");
      assertThat(nodes.leader().serve().desired()).doesNotContainKey("huge");
      assertThat(nodes.status("huge")).isEmpty();
    }
  }

  @Test
  void aGpuOnANodeWithoutOneOrLabelsNoNodeCarriesAreRefusedAndTheWholeFileWithThem() {
    try (ServeNodes nodes = oneNode()) {
      String file = ServeNodes.identity("fits", "1", SMALL)
          + ServeNodes.identity("gpu", "1", "pool: {per_gpu: 1, worker_resources: {GPU: 1}}\n")
              .replace("deployments:\n", "")
          + ServeNodes.identity("zoned", "1", "pool: {workers_per_node: 1, node_selector: {zone: x}}\n")
              .replace("deployments:\n", "");

      DeploymentValidationException e = refusal(nodes, file);

      assertThat(e.problems()).extracting(Problem::path).containsExactly("deployments[1].pool", "deployments[2].pool");
      assertThat(e.problems().get(0).message()).contains("gpu@1 (solo: cannot host one worker: each needs {GPU: 1},"
          + " node total {CPU: 2})").contains("it needs a node with GPU \u2265 1.");
      assertThat(e.problems().get(1).message()).contains("zoned@1 (solo: no label zone (node_selector wants zone=x))")
          .contains("it needs a node with CPU \u2265 1 and label zone=x.");
      assertThat(nodes.leader().serve().desired()).isEmpty(); // not even the deployment that fits
    }
  }

  @Test
  void aDeploymentThatFitsStillDeploysAndOneFindingResourcesBusyIsApplied() {
    try (ServeNodes nodes = oneNode()) {
      nodes.apply(ServeNodes.identity("small", "1", SMALL.replace("CPU: 1", "CPU: 2")));
      nodes.awaitReady("small", "1");
      assertThat(ServeNodes.echoes(nodes.infer("small", ServeNodes.row(3)), 3)).isTrue();

      // The node's 2 CPUs are held, not too few: the worker waits for them to free, it is not refused.
      ApplyResult busy = nodes.apply(ServeNodes.identity("busy", "1", SMALL));
      assertThat(busy.applied()).isTrue();
      Plan.DeploymentPlan plan = busy.plan().deployments().get(0);
      assertThat(plan.noFit()).isNull();
      assertThat(plan.warnings()).singleElement().asString().contains("solo has room for 0 of the 1 workers now")
          .contains("the rest wait for resources to free");
    }
  }

  @Test
  void withWaitForCapacityItIsAppliedWaitsSayingForWhatAndDeploysWhenSuchANodeJoins() {
    try (ServeNodes nodes = oneNode()) {
      ApplyResult applied = nodes.apply(ServeNodes.identity("huge", "1",
          "pool: {workers_per_node: 1, worker_resources: {CPU: 64}, wait_for_capacity: true}\n"));
      assertThat(applied.applied()).isTrue();

      DeploymentStatus waiting = nodes.awaitPhase("huge", Phase.UNSCHEDULABLE);
      assertThat(waiting.message()).isEqualTo("no node selected: no node can host a worker (solo: cannot host one"
          + " worker: each needs {CPU: 64}, node total {CPU: 2}); waiting for a node with CPU \u2265 64 to join");

      nodes.start("big", Resources.cpu(64), Map.of());
      DeploymentStatus ready = nodes.awaitReady("huge", "1");
      assertThat(ready.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("big");
    }
  }

  @Test
  void aDeploymentWhoseNodeIsDownIsStillAppliedAndWaitsForItToComeBack() {
    try (ServeNodes nodes = new ServeNodes(Unplaceable.REFUSE)) {
      nodes.start("node-a", ServeNodes.NODE, Map.of());
      nodes.start("node-b", ServeNodes.NODE, Map.of("zone", "x"));
      String zoned = ServeNodes.identity("zoned", "1", "pool: {workers_per_node: 1, node_selector: {zone: x}}\n");
      nodes.apply(zoned);
      nodes.awaitReady("zoned", "1");

      nodes.crash("node-b");
      DeploymentStatus lost = nodes.awaitPhase("zoned", Phase.UNSCHEDULABLE);
      assertThat(lost.message()).startsWith("no node selected: node-a: no label zone (node_selector wants zone=x);")
          .contains("; node-b: not alive; waiting for a node that can host a worker to come back or join");

      // Re-applying the file (as a GitOps loop does) and a new deployment needing the same node are not refused.
      assertThat(nodes.apply(zoned).applied()).isTrue();
      assertThat(nodes.apply(zoned.replace("name: zoned", "name: zoned-too")).applied()).isTrue();

      nodes.start("node-c", ServeNodes.NODE, Map.of("zone", "x"));
      nodes.awaitReady("zoned", "1");
      nodes.awaitReady("zoned-too", "1");
    }
  }

  @Test
  void theLibraryDefaultAppliesItAndWaitsForANodeThatCanHostIt() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("solo", Resources.cpu(2), Map.of());
      ApplyResult applied = nodes.apply(ServeNodes.identity("huge", "1", HUGE));

      assertThat(applied.applied()).isTrue();
      assertThat(applied.plan().toText())
          .contains("  no node can ever host one of its workers, whatever is free: it needs a node with CPU \u2265 64");
      assertThat(nodes.awaitPhase("huge", Phase.UNSCHEDULABLE).message())
          .endsWith("; waiting for a node with CPU \u2265 64 to join");
      assertThat(nodes.leader().serve().desired()).containsOnlyKeys("huge");
    }
  }
}
