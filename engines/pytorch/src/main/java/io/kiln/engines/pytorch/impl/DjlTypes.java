package io.kiln.engines.pytorch.impl;

import io.kiln.pools.DataType;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * Maps protocol datatypes to DJL's, for the types DJL 0.36's PyTorch engine can create from bytes. INT16,
 * BF16 and the unsigned types wider than 8 bits are left out on purpose: creating them aborts the whole JVM
 * in native code ("terminate called without an active exception"), so the loader refuses them up front.
 */
public final class DjlTypes {

  private static final Map<DataType, ai.djl.ndarray.types.DataType> TO_DJL = new EnumMap<>(DataType.class);

  static {
    TO_DJL.put(DataType.BOOL, ai.djl.ndarray.types.DataType.BOOLEAN);
    TO_DJL.put(DataType.UINT8, ai.djl.ndarray.types.DataType.UINT8);
    TO_DJL.put(DataType.INT8, ai.djl.ndarray.types.DataType.INT8);
    TO_DJL.put(DataType.INT32, ai.djl.ndarray.types.DataType.INT32);
    TO_DJL.put(DataType.INT64, ai.djl.ndarray.types.DataType.INT64);
    TO_DJL.put(DataType.FP16, ai.djl.ndarray.types.DataType.FLOAT16);
    TO_DJL.put(DataType.FP32, ai.djl.ndarray.types.DataType.FLOAT32);
    TO_DJL.put(DataType.FP64, ai.djl.ndarray.types.DataType.FLOAT64);
  }

  private DjlTypes() {
  }

  /** DJL's type for {@code type}, or empty when the PyTorch engine cannot take it (see the class comment). */
  public static Optional<ai.djl.ndarray.types.DataType> toDjl(DataType type) {
    return Optional.ofNullable(TO_DJL.get(type));
  }

  /** The protocol type for a DJL type, or empty when it has none. */
  public static Optional<DataType> fromDjl(ai.djl.ndarray.types.DataType type) {
    for (Map.Entry<DataType, ai.djl.ndarray.types.DataType> e : TO_DJL.entrySet()) {
      if (e.getValue() == type) {
        return Optional.of(e.getKey());
      }
    }
    return Optional.empty();
  }
}
