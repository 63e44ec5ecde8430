package io.kiln.serve.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.serve.AutoscalingSpec;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class AutoscalerTest {

  private static final AutoscalingSpec SPEC = new AutoscalingSpec(1, 4, 2, Duration.ofSeconds(10),
      Duration.ofSeconds(30));
  private final Autoscaler scaler = new Autoscaler();

  @Test
  void steadyWhenTheLoadFitsTheTarget() {
    Autoscaler.Decision d = scaler.decide("p", SPEC, 2, 4, 8, 0);
    assertThat(d).isEqualTo(new Autoscaler.Decision(2, false, "steady: 4 outstanding for 2 workers"));
  }

  @Test
  void scalesUpOnlyOnceTheNeedLastedTheUpscaleDelay() {
    assertThat(scaler.decide("p", SPEC, 1, 5, 8, 1_000)).satisfies(d -> {
      assertThat(d.target()).isEqualTo(1);
      assertThat(d.waiting()).isTrue();
      assertThat(d.reason()).isEqualTo("waiting 10000 ms to scale up to 3 (5 outstanding requests, target 2.0 per"
          + " worker)");
    });
    assertThat(scaler.decide("p", SPEC, 1, 5, 8, 10_999).target()).isEqualTo(1);
    Autoscaler.Decision up = scaler.decide("p", SPEC, 1, 5, 8, 11_000);
    assertThat(up).isEqualTo(new Autoscaler.Decision(3, false,
        "scale up 1 -> 3 (5 outstanding requests, target 2.0 per worker)"));
  }

  @Test
  void aChangeOfDirectionRestartsTheDelay() {
    scaler.decide("p", SPEC, 2, 9, 8, 0); // wants up
    scaler.decide("p", SPEC, 2, 0, 8, 5_000); // wants down now
    assertThat(scaler.decide("p", SPEC, 2, 9, 8, 10_000).waiting()).isTrue(); // up again: its delay starts over
    assertThat(scaler.decide("p", SPEC, 2, 9, 8, 20_000).target()).isEqualTo(4);
  }

  @Test
  void scalesDownAfterTheDownscaleDelayNeverBelowMin() {
    assertThat(scaler.decide("p", SPEC, 4, 0, 8, 0).waiting()).isTrue();
    assertThat(scaler.decide("p", SPEC, 4, 0, 8, 29_999).target()).isEqualTo(4);
    assertThat(scaler.decide("p", SPEC, 4, 0, 8, 30_000).target()).isEqualTo(1);
  }

  @Test
  void neverBeyondWhatTheNodeHostsAndNeverBelowOneWorker() {
    AutoscalingSpec zeroMin = new AutoscalingSpec(0, 8, 1, Duration.ZERO, Duration.ZERO);
    Autoscaler.Decision capped = scaler.decide("p", zeroMin, 1, 100, 3, 0);
    assertThat(capped.target()).isEqualTo(3);
    assertThat(capped.reason()).contains("at most 3 here");
    assertThat(scaler.decide("q", zeroMin, 3, 0, 3, 0).target()).isEqualTo(1);
    Autoscaler.Decision bounded = scaler.decide("r", zeroMin, 6, 100, 3, 0);
    assertThat(bounded).isEqualTo(new Autoscaler.Decision(3, false, "scale 6 -> 3 (above the most the node hosts, 3)"));
  }
}
