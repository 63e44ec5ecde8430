package io.kiln.pipelines.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.TaskOptions;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.pipelines.StepSpec;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PlacementsTest {

  static final Map<String, String> RAN_ON = Map.of("fetch", "node-b");

  static StepSpec step(StepPlacement placement, Resources resources) {
    return new StepSpec("s", new StepAction.Webhook("http://x", 1000), resources, placement, 2, 5000);
  }

  static TaskOptions options(StepPlacement placement, Resources resources) {
    return Placements.options(step(placement, resources), RAN_ON::get, Duration.ofSeconds(60));
  }

  @Test
  void spreadAndDefault() {
    TaskOptions spread = options(StepPlacement.SPREAD, Resources.of("fetch_slot", 1));
    assertThat(spread.strategy()).isEqualTo(SchedulingStrategy.SPREAD);
    assertThat(spread.resources()).isEqualTo(Resources.of("fetch_slot", 1));
    assertThat(options(StepPlacement.DEFAULT, Resources.NONE).strategy()).isEqualTo(SchedulingStrategy.DEFAULT);
  }

  @Test
  void sameNodeAsIsHardAffinityToWhereThatStepRan() {
    TaskOptions o = options(StepPlacement.sameNodeAs("fetch"), Resources.NONE);
    assertThat(o.strategy()).isEqualTo(SchedulingStrategy.onNode("node-b"));
    assertThat(((SchedulingStrategy.NodeAffinity) o.strategy()).soft()).isFalse();
    assertThatThrownBy(() -> options(StepPlacement.sameNodeAs("later"), Resources.NONE))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("'later', which has not run");
  }

  @Test
  void nodeWithResourceRequestsOneUnitUnlessTheStepAsksForMore() {
    TaskOptions o = options(StepPlacement.nodeWithResource("callback_slot"), Resources.cpu(0.5));
    assertThat(o.strategy()).isEqualTo(SchedulingStrategy.DEFAULT);
    assertThat(o.resources()).isEqualTo(Resources.cpu(0.5).with("callback_slot", 1));
    TaskOptions more = options(StepPlacement.nodeWithResource("callback_slot"), Resources.of("callback_slot", 2));
    assertThat(more.resources()).isEqualTo(Resources.of("callback_slot", 2));
  }

  @Test
  void theRuntimeNeverRetriesStepsItself() {
    TaskOptions o = options(StepPlacement.SPREAD, Resources.NONE);
    assertThat(o.maxRetries()).isZero();
    assertThat(o.retryExceptions()).isFalse();
    assertThat(o.timeout()).isEqualTo(Duration.ofMillis(5000));
    assertThat(o.placementTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(Placements.options(step(StepPlacement.SPREAD, Resources.NONE), RAN_ON::get, Duration.ofMillis(-5))
        .placementTimeout()).isPositive();
  }
}
