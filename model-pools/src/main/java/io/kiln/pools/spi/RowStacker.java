package io.kiln.pools.spi;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import java.util.List;

/**
 * Stacks tensors along their first dimension and slices rows back out, on raw row-major bytes: rows are
 * contiguous, so stacking is concatenation and no engine is needed. That holds for {@link DataType#BYTES} too
 * (length-prefixed elements concatenate); slicing BYTES walks the prefixes to find where the rows start.
 */
final class RowStacker {

  /** Largest tensor a Java byte array can hold (a few bytes under {@code Integer.MAX_VALUE}). */
  static final long MAX_TENSOR_BYTES = Integer.MAX_VALUE - 8L;

  private RowStacker() {
  }

  /**
   * Concatenates {@code parts} (same datatype and non-batch dimensions, already checked) into one tensor
   * named {@code name}.
   *
   * @throws InferenceException TOO_LARGE if the result would not fit in one array
   */
  static Tensor stack(String name, List<Tensor> parts) {
    Tensor first = parts.get(0);
    if (parts.size() == 1) {
      return first;
    }
    long rows = 0;
    long bytes = 0;
    for (Tensor t : parts) {
      rows += t.shape()[0];
      bytes += t.data().length;
    }
    if (bytes > MAX_TENSOR_BYTES) {
      throw new InferenceException(InferenceException.Kind.TOO_LARGE, "input '" + name + "' stacked over the batch"
          + " would take " + bytes + " bytes, more than the " + MAX_TENSOR_BYTES + " one tensor can hold");
    }
    byte[] data = new byte[(int) bytes];
    int at = 0;
    for (Tensor t : parts) {
      System.arraycopy(t.data(), 0, data, at, t.data().length);
      at += t.data().length;
    }
    long[] shape = first.shape().clone();
    shape[0] = rows;
    return new Tensor(name, first.datatype(), shape, data);
  }

  /**
   * Rows {@code [fromRow, fromRow + rows)} of {@code whole} (rank ≥ 1, first dimension {@code totalRows})
   * as a tensor named {@code name}; the whole tensor itself when the slice covers it.
   */
  static Tensor slice(Tensor whole, long totalRows, long fromRow, long rows, String name) {
    DataType type = whole.datatype();
    long[] shape = whole.shape().clone();
    if (fromRow == 0 && rows == totalRows) {
      return new Tensor(name, type, shape, whole.data());
    }
    shape[0] = rows;
    if (type == DataType.BYTES) {
      // Variable-length elements: find the rows' first and last element by walking the length prefixes.
      long perRow = totalRows == 0 ? 0 : whole.elementCount() / totalRows;
      int[] at = ByteElements.offsets(whole.data(), whole.elementCount(), "output '" + whole.name() + "'");
      int start = at[Math.toIntExact(fromRow * perRow)];
      int end = at[Math.toIntExact((fromRow + rows) * perRow)];
      byte[] data = new byte[end - start];
      System.arraycopy(whole.data(), start, data, 0, data.length);
      return new Tensor(name, type, shape, data);
    }
    int rowBytes = totalRows == 0 ? 0 : (int) (whole.data().length / totalRows);
    byte[] data = new byte[Math.toIntExact(rows * rowBytes)];
    System.arraycopy(whole.data(), Math.toIntExact(fromRow * rowBytes), data, 0, data.length);
    return new Tensor(name, type, shape, data);
  }
}
