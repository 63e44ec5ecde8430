package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.mlp;
import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A manager that restarts, or is re-created after it died, get-or-creates the same worker names and so
 * adopts its predecessor's live detached workers: same actors, models not reloaded.
 */
class PoolAdoptionTest {

  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  private static List<String> workerIds(PoolStatus s) {
    return s.workers().stream().map(WorkerStatus::actorId).toList();
  }

  private static void serves(ActorHandle<PoolManager> m) {
    InferenceResponse r = result(m.callAsync(PoolManager::infer, ProjectModels.mlpRequest(2, 7), 30_000L));
    assertThat(r.outputs().get(0).shape()).containsExactly(2, 10);
  }

  @Test
  void aRestartedManagerAdoptsItsWorkersWithoutReloadingTheirModels() {
    ActorHandle<PoolManager> m = nodes.start(spec("adopt", "a", mlp(), PoolConfig.DEFAULTS, 2, 0), 2);
    serves(m);
    PoolStatus before = result(m.call(PoolManager::status));
    assertThat(nodes.loads("a", "adopt")).isEqualTo(2);

    result(nodes.node("a").kill(m, true));

    await().atMost(PoolNodes.WAIT).until(() -> result(m.info()).restarts() == 1);
    PoolStatus after = PoolNodes.awaitReady(m, 2);
    assertThat(after.managerId()).isEqualTo(before.managerId());
    assertThat(workerIds(after)).containsExactlyElementsOf(workerIds(before));
    assertThat(after.workers()).extracting(WorkerStatus::loadInfo)
        .as("the models loaded before the restart").containsExactlyElementsOf(
            before.workers().stream().map(WorkerStatus::loadInfo).toList());
    assertThat(nodes.loads("a", "adopt")).as("no model was reloaded").isEqualTo(2);
    serves(m);
  }

  @Test
  void aManagerReCreatedAfterItDiedAdoptsEveryLiveWorkerIncludingScaledUpOnes() {
    PoolSpec spec = spec("recreate", "a", mlp(), PoolConfig.DEFAULTS, 1, 0);
    ActorHandle<PoolManager> m = nodes.start(spec, 1);
    assertThat(result(m.callAsync(PoolManager::scale, 2), PoolNodes.WAIT)).isEqualTo(2);
    List<String> ids = workerIds(result(m.call(PoolManager::status)));

    result(nodes.node("a").kill(m, false));
    assertThat(result(m.info()).state()).isEqualTo(ActorState.DEAD);
    for (String id : ids) {
      assertThat(nodes.node("a").localActors()).filteredOn(i -> i.actorId().equals(id))
          .extracting(ActorInfo::state).as("detached workers outlive their manager").containsExactly(ActorState.ALIVE);
    }

    ActorHandle<PoolManager> again = nodes.start(spec, 2);
    assertThat(again.actorId()).isNotEqualTo(m.actorId());
    assertThat(workerIds(result(again.call(PoolManager::status)))).containsExactlyElementsOf(ids);
    assertThat(nodes.loads("a", "recreate")).isEqualTo(2);
    serves(again);
  }
}
