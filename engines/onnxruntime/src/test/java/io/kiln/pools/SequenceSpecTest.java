package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.WireCodec;
import java.math.BigInteger;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The sequence spec's rules, its request parameters, and a sequence model's spec on the wire. */
class SequenceSpecTest {

  static final SequenceSpec.StateSpec STATE = new SequenceSpec.StateSpec("state", "stateN", 0);

  static ModelSpec.Builder vad() {
    return ModelSpec.builder().uri(Path.of("models/vad/silero")).engine(ModelSpec.ENGINE_ONNX)
        .input("input", DataType.FP32, -1, -1).input("state", DataType.FP32, 2, -1, 128).input("sr", DataType.INT64)
        .output("output", DataType.FP32, -1, 1).output("stateN", DataType.FP32, 2, -1, 128);
  }

  @Test
  void aSequenceModelTravelsWholeInJsonAndCborAndHidesItsStateFromTheSignature() throws Exception {
    ModelSpec spec = vad().sequence(new SequenceSpec(Duration.ofSeconds(3), 10,
        List.of(new SequenceSpec.StateSpec("state", "stateN", -0.5)))).build();
    for (com.fasterxml.jackson.databind.ObjectMapper codec : List.of(WireCodec.json(), WireCodec.cbor())) {
      assertThat(codec.readValue(codec.writeValueAsBytes(spec), ModelSpec.class)).isEqualTo(spec);
    }
    assertThat(WireCodec.json().writeValueAsString(vad().build())).as("no sequence, no field")
        .doesNotContain("sequence");
    assertThat(spec.signature().inputNames()).containsExactly("input", "sr");
    assertThat(spec.signature().outputNames()).containsExactly("output");
  }

  @Test
  void theStateMustBeTheModelsOwnTensorsAlike() {
    assertThatThrownBy(() -> vad().sequence(new SequenceSpec(Duration.ofSeconds(1), 1,
        List.of(new SequenceSpec.StateSpec("h", "stateN", 0)))).build())
        .hasMessage("sequence.state[0].input: 'h' is not among the model's inputs");
    assertThatThrownBy(() -> vad().sequence(new SequenceSpec(Duration.ofSeconds(1), 1,
        List.of(new SequenceSpec.StateSpec("state", "output", 0)))).build())
        .hasMessageContaining("must have the same datatype and shape");
    assertThatThrownBy(() -> new SequenceSpec(Duration.ZERO, 1, List.of(STATE)))
        .hasMessageStartingWith("sequence.idle_timeout_ms");
    assertThatThrownBy(() -> new SequenceSpec(Duration.ofSeconds(1), 0, List.of(STATE)))
        .hasMessageStartingWith("sequence.max_sequences");
    assertThatThrownBy(() -> new SequenceSpec(Duration.ofSeconds(1), 1, List.of(STATE, STATE)))
        .hasMessageContaining("named twice");
  }

  @Test
  void idsAreUint64sAboveZeroOrShortStringsAndFlagsAreBooleans() {
    assertThat(SequenceSpec.idOf(Map.of())).isNull();
    assertThat(SequenceSpec.idOf(Map.of("sequence_id", 7L))).isEqualTo("7");
    assertThat(SequenceSpec.idOf(Map.of("sequence_id", 7))).isEqualTo("7");
    assertThat(SequenceSpec.idOf(Map.of("sequence_id", "7"))).as("one id space").isEqualTo("7");
    assertThat(SequenceSpec.idOf(Map.of("sequence_id", new BigInteger("18446744073709551615"))))
        .isEqualTo("18446744073709551615");
    for (Object bad : List.of(0L, -1L, "", "x".repeat(257), 1.5, new BigInteger("18446744073709551616"), true)) {
      assertThatThrownBy(() -> SequenceSpec.idOf(Map.of("sequence_id", bad))).as("%s", bad)
          .isInstanceOf(InferenceException.class).hasMessageStartingWith("parameters.sequence_id");
    }
    assertThat(SequenceSpec.flag(Map.of(), SequenceSpec.SEQUENCE_END)).isFalse();
    assertThat(SequenceSpec.flag(Map.of("sequence_end", true), SequenceSpec.SEQUENCE_END)).isTrue();
    assertThatThrownBy(() -> SequenceSpec.flag(Map.of("sequence_end", 1L), SequenceSpec.SEQUENCE_END))
        .hasMessageStartingWith("parameters.sequence_end");
  }
}
