package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The cluster binds an explicit interface: a wildcard in any spelling is refused. */
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
}
