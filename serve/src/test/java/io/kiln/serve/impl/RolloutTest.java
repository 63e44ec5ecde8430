package io.kiln.serve.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.serve.DeploymentStatus.Phase;
import java.util.List;
import org.junit.jupiter.api.Test;

class RolloutTest {

  private static Rollout.Outcome decide(int placements, int ready, boolean desiredReady, String previous,
                                        boolean previousReady, String failure, int stale) {
    return Rollout.decide(new Rollout.Facts("2", placements, ready, desiredReady, previous, previousReady, failure,
        List.of("no node selected: 2 nodes known, 2 alive, none qualifies (see skipped)"), stale));
  }

  @Test
  void aFreshDeploymentServesNothingUntilAPoolIsReadyThenServesWhereReady() {
    assertThat(decide(2, 0, false, null, false, null, 0))
        .isEqualTo(new Rollout.Outcome(null, Phase.DEPLOYING, "warming version 2 (0 of 2 node(s) ready)", false));
    Rollout.Outcome partly = decide(2, 1, true, null, false, null, 0);
    assertThat(partly.serving()).isEqualTo("2");
    assertThat(partly.phase()).isEqualTo(Phase.DEPLOYING);
    assertThat(partly.everywhere()).isFalse();
  }

  @Test
  void readyOnEverySelectedNodeIsReadyAndLetsStalePoolsGo() {
    Rollout.Outcome o = decide(2, 2, true, "1", true, null, 2);
    assertThat(o.serving()).isEqualTo("2");
    assertThat(o.phase()).isEqualTo(Phase.READY);
    assertThat(o.everywhere()).isTrue();
    assertThat(o.message()).isEqualTo("serving on 2 node(s); retiring 2 old pool(s)");
  }

  @Test
  void theOldVersionServesWhileTheNewOneWarmsAnywhere() {
    Rollout.Outcome o = decide(2, 1, true, "1", true, null, 2);
    assertThat(o.serving()).isEqualTo("1");
    assertThat(o.phase()).isEqualTo(Phase.ROLLING);
    assertThat(o.message()).contains("warming version 2 (1 of 2 node(s) ready)").contains("version 1 serves");
  }

  @Test
  void anOldVersionWithoutReadyPoolsHandsOverToTheNewOneWhereItIsReady() {
    assertThat(decide(2, 1, true, "1", false, null, 0).serving()).isEqualTo("2");
    assertThat(decide(2, 0, false, "1", false, null, 0).serving()).isNull();
  }

  @Test
  void aServingVersionKeepsServingWhileOneOfItsPoolsWarms() {
    Rollout.Outcome o = decide(3, 2, true, "2", true, null, 0);
    assertThat(o.serving()).isEqualTo("2");
    assertThat(o.phase()).isEqualTo(Phase.DEPLOYING);
    assertThat(o.message()).contains("2 of 3");
  }

  @Test
  void aFailedVersionLeavesTheOldOneServingAndSaysWhy() {
    Rollout.Outcome o = decide(2, 0, false, "1", true, "node-a: model did not load", 2);
    assertThat(o).isEqualTo(new Rollout.Outcome("1", Phase.FAILED,
        "version 2 failed to start: node-a: model did not load; version 1 keeps serving", false));
    assertThat(decide(2, 0, false, null, false, "boom", 0).serving()).isNull();
    assertThat(decide(2, 0, false, "1", false, "boom", 0).serving()).isNull();
  }

  @Test
  void noSelectedNodeIsUnschedulable() {
    Rollout.Outcome o = decide(0, 0, false, "1", true, null, 1);
    assertThat(o.phase()).isEqualTo(Phase.UNSCHEDULABLE);
    assertThat(o.serving()).isEqualTo("1");
    assertThat(o.message()).startsWith("no node selected").contains("version 1 serves where its pools still run");
    assertThat(decide(0, 0, false, null, false, null, 0).serving()).isNull();
  }
}
