package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Collections;
import org.junit.jupiter.api.Test;

class PlacementGroupOptionsTest {

  @Test
  void defaultsFollowRay() {
    PlacementGroupOptions o = PlacementGroupOptions.builder().bundle(Resources.cpu(1)).build();
    assertThat(o.strategy()).isEqualTo(PlacementGroupStrategy.PACK);
    assertThat(o.lifetime()).isEqualTo(Lifetime.OWNED);
    assertThat(o.name()).isNull();
    assertThat(o.namespace()).isEqualTo(ActorOptions.DEFAULT_NAMESPACE);
    assertThat(o.timeout()).isZero();
  }

  @Test
  void badInputIsRefusedNamingTheField() {
    assertThatThrownBy(() -> PlacementGroupOptions.builder().build()).hasMessageContaining("bundles");
    assertThatThrownBy(() -> PlacementGroupOptions.builder().bundle(Resources.cpu(1)).bundle(Resources.NONE).build())
        .hasMessageContaining("bundles[1]");
    assertThatThrownBy(() -> PlacementGroupOptions.builder()
        .bundles(Collections.nCopies(PlacementGroupOptions.MAX_BUNDLES + 1, Resources.cpu(1))).build())
        .hasMessageContaining("bundles");
    assertThatThrownBy(() -> PlacementGroupOptions.builder().bundle(Resources.cpu(1)).name("has space").build())
        .hasMessageContaining("name");
    assertThatThrownBy(() -> PlacementGroupOptions.builder().bundle(Resources.cpu(1)).timeout(Duration.ofSeconds(-1))
        .build()).hasMessageContaining("timeout");
    assertThatThrownBy(() -> new SchedulingStrategy.InPlacementGroup("pg-1", -2)).hasMessageContaining("bundleIndex");
  }
}
