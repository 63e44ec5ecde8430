package io.kiln.serve.impl;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.Resources;
import io.kiln.runtime.testing.TestNodes;
import io.kiln.serve.DeploymentStatus;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Desired state over the runtime's typed stores: entries another Kiln version wrote are skipped, not fatal. */
@Tag("slow")
class DesiredStateStoreTest {

  LocalCluster cluster;
  KilnRuntime runtime;

  @BeforeEach
  void start() {
    cluster = LocalCluster.create();
    runtime = TestNodes.start(cluster, "a", Resources.cpu(1));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  @Test
  void unreadableEntriesAreSkippedOnLoadAndOnChange() {
    result(runtime.store(DesiredState.DEPLOYMENTS, String.class).put("old", "written by another version"));
    result(runtime.store(DesiredState.STATUS, String.class).put("old", "written by another version"));
    DesiredState state = new DesiredState(runtime);
    AtomicInteger changes = new AtomicInteger();
    state.onChange(changes::incrementAndGet);
    result(state.load());
    assertThat(state.desired()).isEmpty();
    assertThat(state.statuses()).isEmpty();
    assertThat(result(state.markDeleting("old"))).isFalse();

    result(runtime.store(DesiredState.DEPLOYMENTS, String.class).put("newer", "also unreadable"));
    await().until(() -> changes.get() == 1);
    assertThat(state.desired()).isEmpty();
  }

  @Test
  void statusesAreStoredAsWireJson() {
    DesiredState state = new DesiredState(runtime);
    DeploymentStatus s = new DeploymentStatus("d", "1", "1", DeploymentStatus.Phase.READY, "", 1, List.of(), null, null,
        null, 5L);
    result(state.putStatus(s));
    DesiredState other = new DesiredState(runtime);
    result(other.load());
    assertThat(other.status("d")).contains(s);
  }
}
