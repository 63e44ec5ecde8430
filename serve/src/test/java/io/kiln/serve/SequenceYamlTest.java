package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.SequenceSpec;
import io.kiln.pools.TensorSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A deployment's {@code sequence:} section (issue #36, docs/sequences.md): read into the model's {@link SequenceSpec},
 * written back to JSON and read again equal; every mistake reported at its line and column, naming the field.
 */
class SequenceYamlTest {

  static final String VAD = ScalarYamlTest.VAD + """
          sequence:
            idle_timeout_ms: 5000
            max_sequences: 64
            state: [{input: state, output: stateN, init: zeros}]
      """;

  @Test
  void theSectionGivesTheModelItsSequencesAndHidesTheStateFromClients() {
    DeploymentSpec vad = Specs.single(VAD);

    SequenceSpec s = vad.model().sequence();
    assertThat(s.idleTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(s.maxSequences()).isEqualTo(64);
    assertThat(s.state()).containsExactly(new SequenceSpec.StateSpec("state", "stateN", 0));
    assertThat(vad.model().signature().inputs()).extracting(TensorSpec::name).containsExactly("input", "sr");
    assertThat(vad.model().signature().outputs()).extracting(TensorSpec::name).containsExactly("output");
    assertThat(vad.model().modelSignature().inputs()).extracting(TensorSpec::name)
        .containsExactly("input", "state", "sr");
    assertThat(SpecJson.fromJson(SpecJson.toJson(vad))).isEqualTo(vad);
  }

  @Test
  void defaultsAndAGivenInitialValueRoundTrip() {
    DeploymentSpec vad = Specs.single(ScalarYamlTest.VAD + """
          sequence:
            state: [{input: state, output: stateN, init: 0.25}]
      """);

    assertThat(vad.model().sequence().idleTimeout()).isEqualTo(SequenceSpec.DEFAULT_IDLE_TIMEOUT);
    assertThat(vad.model().sequence().maxSequences()).isEqualTo(SequenceSpec.DEFAULT_MAX_SEQUENCES);
    assertThat(vad.model().sequence().state().get(0).init()).isEqualTo(0.25);
    assertThat(SpecJson.fromJson(SpecJson.toJson(vad))).isEqualTo(vad);
  }

  @Test
  void aStateNotAmongTheModelsTensorsIsReportedAtItsField() {
    Specs.onlyProblem(VAD.replace("input: state, output", "input: stat, output"), 20, 23,
        "deployments[0].sequence.state[0].input", "'stat' is not among the model's inputs");
    Specs.onlyProblem(VAD.replace("output: stateN, init", "output: output, init"), 20, 15,
        "deployments[0].sequence.state[0]", "must have the same datatype and shape");
  }

  @Test
  void badValuesAreReportedAtTheirLineAndColumn() {
    Specs.onlyProblem(VAD.replace("init: zeros", "init: ones"), 20, 52,
        "deployments[0].sequence.state[0].init", "must be zeros or a number");
    Specs.onlyProblem(VAD.replace("idle_timeout_ms: 5000", "idle_timeout_ms: 0"), 18, 24,
        "deployments[0].sequence.idle_timeout_ms", "");
    Specs.onlyProblem(VAD.replace("max_sequences: 64", "max_sequences: 0"), 19, 22,
        "deployments[0].sequence.max_sequences", "");
    Specs.onlyProblem(VAD.replace("max_sequences: 64", "max_sequence: 64"), 19, 7,
        "deployments[0].sequence.max_sequence", "did you mean 'max_sequences'");
    Specs.onlyProblem(VAD.replace("state: [{input: state, output: stateN, init: zeros}]", "state: []"), 20, 14,
        "deployments[0].sequence.state", "at least one");
  }

  @Test
  void theExampleLoads() {
    Path example = Path.of("..", "deploy", "examples", "vad", "vad.yaml");
    DeploymentSpec vad = new DeploymentLoader(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false))
        .load(example).deployments().get(0);
    assertThat(vad.model().sequence().state()).extracting(SequenceSpec.StateSpec::output).containsExactly("stateN");
  }
}
