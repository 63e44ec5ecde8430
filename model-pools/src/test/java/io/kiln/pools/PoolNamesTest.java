package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class PoolNamesTest {

  @Test
  void namesFollowTheArchitecture() {
    assertThat(PoolNames.deployment("mlp", "1")).isEqualTo("mlp@1");
    assertThat(PoolNames.prefix("mlp", "1")).isEqualTo("kiln/pool/mlp@1/");
    assertThat(PoolNames.poolManager("mlp", "1", "node-a")).isEqualTo("kiln/pool/mlp@1/node-a");
    assertThat(PoolNames.worker("mlp", "1", "node-a", 3)).isEqualTo("kiln/pool/mlp@1/node-a/worker-3");
    assertThat(PoolNames.poolManager("mlp", "1", "n")).isEqualTo("kiln/pool/mlp@1/n");
    assertThat(PoolNames.worker("mlp", "1", "n", 0)).isEqualTo("kiln/pool/mlp@1/n/worker-0");
  }

  @Test
  void parseIsTheInverse() {
    assertThat(PoolNames.parse("kiln/pool/mlp@1.2/node-a")).contains(
        new PoolNames.Parsed("mlp", "1.2", "node-a", OptionalInt.empty()));
    PoolNames.Parsed w = PoolNames.parse("kiln/pool/mlp@1/node-a/worker-12").orElseThrow();
    assertThat(w.workerIndex()).hasValue(12);
    assertThat(w.isManager()).isFalse();
    assertThat(PoolNames.parse("kiln/pool/mlp@1/node-a/worker-x")).isEmpty();
    assertThat(PoolNames.parse("kiln/pool/mlp/node-a")).isEmpty();
    assertThat(PoolNames.parse("other/mlp@1/node-a")).isEmpty();
  }

  @Test
  void refusesNamesThatWouldNotParseBack() {
    assertThatThrownBy(() -> PoolNames.poolManager("mlp", "1", "a/b")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> PoolNames.worker("mlp", "1", "a", -1)).isInstanceOf(IllegalArgumentException.class);
  }
}
