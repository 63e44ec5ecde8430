package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The cluster binds an explicit interface: a wildcard in any spelling is refused. The event bus's failure-detection
 * bound has a default, a floor, and survives every other change of the options.
 */
class ClusterOptionsTest {

  @Test
  void wildcardsInEverySpellingAreRefused() {
    for (String wildcard : List.of("0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0", "::0", "0", "0.0", "*", "", " ")) {
      assertThatThrownBy(() -> ClusterOptions.head(wildcard, 5701)).as("'%s'", wildcard)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("explicit interface");
    }
  }

  @Test
  void explicitAddressesAndNamesAreAccepted() {
    for (String host : List.of("127.0.0.1", "10.1.2.3", "::1", "[::1]", "fe80::1", "node-1.internal", "localhost")) {
      assertThat(ClusterOptions.head(host, 5701).host()).isEqualTo(host);
    }
    assertThat(ClusterOptions.head("127.0.0.1", 0).clusterName()).isEqualTo(ClusterOptions.DEFAULT_CLUSTER_NAME);
  }

  @Test
  void theBusFailureDetectionBoundDefaultsHasAFloorAndIsKeptByEveryOtherChange() {
    ClusterOptions o = ClusterOptions.head("127.0.0.1", 0);
    assertThat(o.busFailureDetect()).isEqualTo(ClusterOptions.DEFAULT_BUS_FAILURE_DETECT)
        .isLessThan(ClusterOptions.DEFAULT_FAILURE_TIMEOUT);
    assertThatThrownBy(() -> o.withBusFailureDetect(Duration.ofMillis(199)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 200 ms");
    ClusterOptions tight = o.withBusFailureDetect(Duration.ofMillis(500));
    ClusterOptions changed = tight.withClusterName("x").withSecret("s").withFailureDetection(Duration.ofSeconds(1),
        Duration.ofSeconds(3)).withMinClusterSize(2).withBusPort(7000).withDiscovery(ClusterDiscovery.STATIC);
    assertThat(changed.busFailureDetect()).isEqualTo(Duration.ofMillis(500));
    assertThat(changed.toString()).contains("busFailureDetect=500ms");
    assertThat(o.toString()).doesNotContain("busFailureDetect");
  }
}
