package io.kiln.pools.testing;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import java.util.List;
import java.util.Map;

/** Builds small requests whose rows and shapes tests control. */
public final class Requests {

  private Requests() {
  }

  /** A request {@code id} with one FP32 input "x" of shape [rows, width], values distinct per id. */
  public static InferenceRequest request(String id, int rows, int width) {
    float[] values = new float[rows * width];
    for (int i = 0; i < values.length; i++) {
      values[i] = id.hashCode() + i;
    }
    return new InferenceRequest(id, List.of(Tensor.ofFloats("x", new long[] {rows, width}, values)), List.of(), Map.of());
  }

  public static InferenceRequest request(String id, int rows) {
    return request(id, rows, 4);
  }

  /** Like {@link #request(String, int, int)} but asking for the named outputs. */
  public static InferenceRequest withOutputs(String id, int rows, String... outputs) {
    InferenceRequest r = request(id, rows);
    return new InferenceRequest(id, r.inputs(), List.of(outputs), Map.of());
  }

  /** A request whose single input has datatype {@code type} (zeros), shape [rows, 4]. */
  public static InferenceRequest typed(String id, int rows, DataType type) {
    return new InferenceRequest(id, List.of(new Tensor("x", type, new long[] {rows, 4}, new byte[rows * 4 * type.byteSize()])),
        List.of(), Map.of());
  }

  /** The first dimension of its first input that has one; 1 for a request of scalars only. */
  public static int rowsOf(InferenceRequest r) {
    return (int) r.inputs().stream().filter(t -> t.shape().length > 0).mapToLong(t -> t.shape()[0]).findFirst()
        .orElse(1);
  }
}
