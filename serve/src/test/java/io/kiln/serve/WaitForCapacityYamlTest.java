package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** {@code pool.wait_for_capacity}: read from YAML (false unless set), kept in the desired state's JSON. */
class WaitForCapacityYamlTest {

  @Test
  void itIsFalseUnlessSetAndTravelsInTheJsonOnlyWhenTrue() throws Exception {
    DeploymentSpec plain = Specs.single(Specs.MINIMAL);
    assertThat(plain.pool().waitForCapacity()).isFalse();
    assertThat(new ObjectMapper().readTree(SpecJson.toJson(plain)).at("/pool").has("wait_for_capacity")).isFalse();

    DeploymentSpec waiting = Specs.single(Specs.MINIMAL + "      wait_for_capacity: true\n");
    assertThat(waiting.pool().waitForCapacity()).isTrue();
    assertThat(new ObjectMapper().readTree(SpecJson.toJson(waiting)).at("/pool/wait_for_capacity").asBoolean())
        .isTrue();
    assertThat(SpecJson.fromJson(SpecJson.toJson(waiting))).isEqualTo(waiting);
  }

  @Test
  void aValueThatIsNoBooleanIsAProblemAtItsLine() {
    Specs.onlyProblem(Specs.MINIMAL + "      wait_for_capacity: later\n", 11, 26, "deployments[0].pool.wait_for_capacity",
        "");
  }
}
