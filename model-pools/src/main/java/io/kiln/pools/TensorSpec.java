package io.kiln.pools;

import java.util.Arrays;
import java.util.Objects;

/**
 * The declared name, type and shape of a model input or output. A dimension of -1 accepts any size; the
 * first dimension of every input is the batch dimension along which the pool stacks requests.
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
