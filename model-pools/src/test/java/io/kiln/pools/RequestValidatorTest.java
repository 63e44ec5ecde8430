package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The one request check: field-named messages, the batch limit, and the field-by-field order decoders use. */
class RequestValidatorTest {

  private static final ModelSignature SIGNATURE = new ModelSignature(
      List.of(new TensorSpec("input", DataType.FP32, new long[] {-1, 4})),
      List.of(new TensorSpec("output", DataType.FP32, new long[] {-1, 4})));

  private static InferenceRequest rows(int n) {
    return InferenceRequest.of(Tensor.ofFloats("input", new long[] {n, 4}, new float[n * 4]));
  }

  @Test
  void aValidRequestPassesAsItself() {
    InferenceRequest r = rows(2);
    ValidatedRequest v = new RequestValidator("mlp", SIGNATURE, 8).validate(r);

    assertThat(v.request()).isSameAs(r);
    assertThat(v.signature()).isEqualTo(SIGNATURE);
  }

  @Test
  void theBatchLimitIsTheValidatorsWhenItHasOne() {
    assertThatThrownBy(() -> new RequestValidator("mlp", SIGNATURE, 8).validate(rows(9)))
        .isInstanceOf(InferenceException.class)
        .hasMessage("inputs[0].shape: batch size 9 exceeds max_batch_size 8 of model 'mlp'");
    assertThat(new RequestValidator("mlp", SIGNATURE, 0).validate(rows(9)).request().inputs()).hasSize(1);
  }

  @Test
  void aScalarInputHasShapeEmptyAndOneElementAndNoBatchLimit() {
    // Silero VAD's inputs: audio rows, a state whose first dimension the model fixes, and the sample rate.
    ModelSignature vad = new ModelSignature(List.of(new TensorSpec("input", DataType.FP32, new long[] {-1, -1}),
        new TensorSpec("state", DataType.FP32, new long[] {2, -1, 128}), new TensorSpec("sr", DataType.INT64, new long[0])),
        List.of(new TensorSpec("output", DataType.FP32, new long[] {-1, 1})));
    RequestValidator validator = new RequestValidator("vad", vad, 1);
    Tensor input = Tensor.ofFloats("input", new long[] {1, 512}, new float[512]);
    Tensor state = Tensor.ofFloats("state", new long[] {2, 1, 128}, new float[256]);
    Tensor sr = new Tensor("sr", DataType.INT64, new long[0], new byte[8]);

    assertThat(validator.validate(InferenceRequest.of(input, state, sr)).request().inputs()).hasSize(3);
    assertThatThrownBy(() -> validator.validate(InferenceRequest.of(input, state,
        new Tensor("sr", DataType.INT64, new long[] {1}, new byte[8]))))
        .isInstanceOf(InferenceException.class)
        .hasMessage("inputs[2].shape: [1] does not match [] of input 'sr' (a scalar: shape [] and one element)");
    assertThatThrownBy(() -> validator.validate(InferenceRequest.of(
        Tensor.ofFloats("input", new long[] {2, 512}, new float[1024]), state, sr)))
        .hasMessage("inputs[0].shape: batch size 2 exceeds max_batch_size 1 of model 'vad'");
  }

  @Test
  void aDecoderChecksFieldByFieldAndFinishesOnlyACompleteCheck() {
    RequestValidator validator = new RequestValidator("mlp", SIGNATURE, 0);
    RequestValidator.Check check = validator.begin();
    TensorSpec spec = check.input(0, "input");
    check.datatype(0, spec, DataType.FP32);
    check.shape(0, spec, new long[] {1, 4});
    assertThatThrownBy(() -> check.finish(rows(1))).isInstanceOf(IllegalStateException.class);
    check.inputsComplete();
    check.output(0, "output");
    InferenceRequest decoded = new InferenceRequest("", rows(1).inputs(), List.of("output"), Map.of());

    assertThat(check.finish(decoded).request()).isSameAs(decoded);
    assertThatThrownBy(() -> validator.begin().inputsComplete())
        .hasMessage("inputs: missing input 'input' of model 'mlp'");
  }

  @Test
  void bytesInputsPassWhereTheSignatureSaysBytesAndTheirDataMustHoldTheShapesElements() {
    ModelSignature text = new ModelSignature(List.of(new TensorSpec("text", DataType.BYTES, new long[] {-1})),
        List.of(new TensorSpec("upper", DataType.BYTES, new long[] {-1})));
    RequestValidator validator = new RequestValidator("upper", text, 0);
    byte[] two = io.kiln.pools.spi.ByteElements.joinStrings(new String[] {"ab", ""});
    assertThat(validator.validate(InferenceRequest.of(new Tensor("text", DataType.BYTES, new long[] {2}, two)))
        .request().inputs()).hasSize(1);

    assertThatThrownBy(() -> validator.validate(InferenceRequest.of(new Tensor("text", DataType.BYTES, new long[] {3}, two))))
        .isInstanceOf(InferenceException.class).hasMessageStartingWith("inputs[0].data: input 'text': ");
    byte[] overrun = {9, 0, 0, 0, 'a'};
    assertThatThrownBy(() -> validator.validate(InferenceRequest.of(new Tensor("text", DataType.BYTES, new long[] {1}, overrun))))
        .isInstanceOf(InferenceException.class)
        .hasMessage("inputs[0].data: input 'text': BYTES element 0 claims 9 bytes but only 1 remain");
    assertThatThrownBy(() -> validator.validate(InferenceRequest.of(Tensor.ofFloats("text", new long[] {1}, new float[1]))))
        .isInstanceOf(InferenceException.class).hasMessage("inputs[0].datatype: input 'text' is BYTES, got FP32");
    assertThatThrownBy(() -> new RequestValidator("mlp", SIGNATURE, 0).validate(
        InferenceRequest.of(new Tensor("input", DataType.BYTES, new long[] {2}, two))))
        .isInstanceOf(InferenceException.class).hasMessage("inputs[0].datatype: input 'input' is FP32, got BYTES");
  }
}
