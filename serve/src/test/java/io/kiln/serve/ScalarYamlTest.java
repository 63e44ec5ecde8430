package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.DataType;
import io.kiln.pools.TensorSpec;
import org.junit.jupiter.api.Test;

/**
 * Issue #36: {@code shape: []} declares a scalar (Silero VAD's {@code sr}), which a deployment file may hold for an
 * input or an output; it reaches the desired state's JSON as {@code []} and comes back the same.
 */
class ScalarYamlTest {

  static final String VAD = """
      deployments:
        - name: vad
          version: "5"
          model:
            uri: models/vad/silero
            engine: OnnxRuntime
            inputs:
              - {name: input, datatype: FP32,  shape: [-1, -1]}
              - {name: state, datatype: FP32,  shape: [2, -1, 128]}
              - {name: sr,    datatype: INT64, shape: []}
            outputs:
              - {name: output, datatype: FP32, shape: [-1, 1]}
              - {name: stateN, datatype: FP32, shape: [2, -1, 128]}
          batching: {max_batch_size: 1}
          pool:
            workers_per_node: 1
      """;

  @Test
  void aScalarIsShapeEmptyAndPassedWholeAsIsAStateWithAFixedFirstDimension() throws Exception {
    DeploymentSpec vad = Specs.single(VAD);

    assertThat(vad.model().inputs()).extracting(TensorSpec::name, TensorSpec::datatype, TensorSpec::scalar,
        TensorSpec::batched).containsExactly(org.assertj.core.groups.Tuple.tuple("input", DataType.FP32, false, true),
        org.assertj.core.groups.Tuple.tuple("state", DataType.FP32, false, false),
        org.assertj.core.groups.Tuple.tuple("sr", DataType.INT64, true, false));
    assertThat(vad.model().inputs().get(2).shape()).isEmpty();
    assertThat(vad.batching().maxBatchSize()).isEqualTo(1);
    String json = SpecJson.toJson(vad);
    com.fasterxml.jackson.databind.JsonNode shape = new ObjectMapper().readTree(json).at("/model/inputs/2/shape");
    assertThat(shape.isArray()).as(json).isTrue();
    assertThat(shape.size()).isZero();
    assertThat(SpecJson.fromJson(json)).isEqualTo(vad);
  }

  @Test
  void aScalarOutputIsDeclaredTheSameWay() {
    DeploymentSpec identity = Specs.single(Specs.MINIMAL
        .replace("inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]",
            "inputs:  [{name: input,  datatype: FP32, shape: []}]")
        .replace("outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]",
            "outputs: [{name: output, datatype: FP32, shape: []}]"));

    assertThat(identity.model().outputs()).singleElement().satisfies(o -> assertThat(o.scalar()).isTrue());
  }
}
