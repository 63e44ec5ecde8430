package io.kiln.pools;

import java.util.Arrays;
import java.util.Objects;

/**
 * The declared name, type and shape of a model input or output. A dimension of -1 accepts any size. A tensor
 * whose first dimension is -1 is {@link #batched() batched}: the pool stacks requests along that dimension and
 * splits the outputs back along it. A scalar (shape {@code []}, one element) and a tensor whose first dimension is
 * fixed are passed to the model whole, once per batch: requests share a batch only when those inputs are equal
 * (see docs/yaml.md, "Tensor shapes").
 */
public record TensorSpec(String name, DataType datatype, long[] shape) {

  public TensorSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(datatype, "datatype");
    shape = shape.clone();
    for (long d : shape) {
      if (d < -1) {
        throw new IllegalArgumentException("dimension of '" + name + "' must be -1 or >= 0, got " + d);
      }
    }
  }

  /**
   * Whether the pool stacks requests along this tensor's first dimension (declared -1). False for a scalar (rank 0)
   * and for a tensor whose first dimension the spec fixes: those go to the model as given, once per batch.
   */
  public boolean batched() {
    return shape.length > 0 && shape[0] == -1;
  }

  /** Whether this is a scalar: rank 0, shape {@code []}, exactly one element. */
  public boolean scalar() {
    return shape.length == 0;
  }

  /** Whether {@code actual} matches this spec's rank and every fixed dimension. */
  public boolean accepts(long[] actual) {
    if (actual.length != shape.length) {
      return false;
    }
    for (int i = 0; i < shape.length; i++) {
      if (shape[i] != -1 && shape[i] != actual[i]) {
        return false;
      }
    }
    return true;
  }

  @Override
  public long[] shape() {
    return shape.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TensorSpec s && s.name.equals(name) && s.datatype == datatype && Arrays.equals(s.shape, shape);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, datatype, Arrays.hashCode(shape));
  }

  @Override
  public String toString() {
    return name + ":" + datatype + Arrays.toString(shape);
  }
}
