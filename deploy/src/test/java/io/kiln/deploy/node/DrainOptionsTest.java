package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.deploy.KilnCommands;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class DrainOptionsTest {

  @Test
  void aGraceOfZeroIsNoDrainAndTheLingerNeverOutlastsTheGrace() {
    assertThat(DrainOptions.NONE.enabled()).isFalse();
    assertThat(DrainOptions.of(Duration.ofSeconds(25)).enabled()).isTrue();
    assertThat(DrainOptions.of(Duration.ofMillis(300)).linger()).isEqualTo(Duration.ofMillis(300));
    assertThat(DrainOptions.of(Duration.ofSeconds(25)).linger()).isEqualTo(DrainOptions.DEFAULT_LINGER);
    assertThatThrownBy(() -> DrainOptions.of(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void kilnStartTakesTheDrainGraceInSecondsAndRefusesNonsense() {
    List<String> base = List.of("--head");
    assertThat(KilnCommands.parseStart(base).drain().grace()).isEqualTo(Duration.ofSeconds(25));
    assertThat(KilnCommands.parseStart(List.of("--head", "--drain-grace", "2.5")).drain().grace())
        .isEqualTo(Duration.ofMillis(2500));
    assertThat(KilnCommands.parseStart(List.of("--head", "--drain-grace", "0")).drain().enabled()).isFalse();
    assertThatThrownBy(() -> KilnCommands.parseStart(List.of("--head", "--drain-grace", "-1")).drain())
        .isInstanceOf(RuntimeException.class).hasMessageContaining("--drain-grace");
  }
}
