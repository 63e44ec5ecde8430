package io.kiln.pipelines.graphs;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import java.util.Arrays;

/** A source's {@code [i]}: row i of a tensor, as a tensor of its own without the first dimension. Stateless. */
final class Rows {

  private Rows() {
  }

  /**
   * Row {@code row} of {@code t}, named {@code name}: shape {@code t.shape()[1:]}.
   *
   * @throws InferenceException INTERNAL naming the source when {@code t} is a scalar or has no such row (a step
   *     answered fewer rows than the graph reads)
   */
  static Tensor select(Tensor t, int row, String name, String source) {
    long[] shape = t.shape();
    if (shape.length == 0 || row >= shape[0]) {
      throw new InferenceException(InferenceException.Kind.INTERNAL, source + " is " + t.datatype()
          + Arrays.toString(shape) + ": it has no row " + row);
    }
    long[] rest = Arrays.copyOfRange(shape, 1, shape.length);
    if (shape[0] == 1) { // the one row of a one-row answer (crop.crops[0]): its bytes as they are, no copy
      return new Tensor(name, t.datatype(), rest, t.data());
    }
    long perRow = Tensor.elementCount(rest);
    if (t.datatype() == DataType.BYTES) {
      var elements = t.byteElements();
      int from = Math.toIntExact(row * perRow);
      return Tensor.ofBytes(name, rest, elements.subList(from, from + (int) perRow));
    }
    int size = t.datatype().byteSize();
    int from = Math.toIntExact(row * perRow * size);
    return new Tensor(name, t.datatype(), rest, Arrays.copyOfRange(t.data(), from, from + (int) (perRow * size)));
  }
}
