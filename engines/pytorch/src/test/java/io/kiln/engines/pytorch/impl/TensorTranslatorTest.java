package io.kiln.engines.pytorch.impl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Raw little-endian bytes survive the trip into PyTorch and back for every datatype the engine holds. */
class TensorTranslatorTest {

  private static NDManager manager;

  @BeforeAll
  static void start() {
    manager = EngineSetup.pytorch(0, 0).newBaseManager();
  }

  @AfterAll
  static void stop() {
    manager.close();
  }

  @Test
  void supportedTypesCoverWhatTheProtocolNeeds() {
    Set<DataType> supported = EnumSet.noneOf(DataType.class);
    for (DataType t : DataType.values()) {
      DjlTypes.toDjl(t).ifPresent(d -> supported.add(t));
    }
    assertThat(supported).containsExactlyInAnyOrder(DataType.FP32, DataType.FP64, DataType.FP16, DataType.INT8,
        DataType.INT32, DataType.INT64, DataType.UINT8, DataType.BOOL);
  }

  @Test
  void aScalarIsAZeroDimensionalArray() {
    Tensor in = new Tensor("k", DataType.INT64, new long[0], new byte[] {(byte) 0x80, 0x3e, 0, 0, 0, 0, 0, 0});

    try (NDManager scope = manager.newSubManager()) {
      NDArray array = TensorTranslator.toNdArray(scope, in);
      assertThat(array.getShape().dimension()).isZero();
      assertThat(array.getLong()).isEqualTo(16_000L);
      assertThat(TensorTranslator.fromNdArray("k", array)).isEqualTo(in);
    }
  }

  @ParameterizedTest
  @EnumSource(value = DataType.class, names = {"BOOL", "UINT8", "INT8", "INT32", "INT64", "FP16", "FP32", "FP64"})
  void bytesRoundTrip(DataType type) {
    byte[] data = new byte[6 * type.byteSize()];
    for (int i = 0; i < data.length; i++) {
      // Small positive values: valid for every type (BOOL must be 0 or 1, floats must not be NaN payloads).
      data[i] = (byte) (type == DataType.BOOL ? i % 2 : (i % type.byteSize() == type.byteSize() - 1 ? 0x3c : i));
    }
    Tensor in = new Tensor("t", type, new long[] {2, 3}, data);

    try (NDManager scope = manager.newSubManager()) {
      NDArray array = TensorTranslator.toNdArray(scope, in);
      Tensor out = TensorTranslator.fromNdArray("t", array);

      assertThat(out).isEqualTo(in);
    }
  }

  @Test
  void bytesAreReadAsLittleEndian() {
    Tensor in = Tensor.ofFloats("x", new long[] {2}, new float[] {1.5f, -2f});
    try (NDManager scope = manager.newSubManager()) {
      NDArray array = TensorTranslator.toNdArray(scope, in);

      assertThat(array.toFloatArray()).containsExactly(1.5f, -2f);
      assertThat(array.mul(2).toFloatArray()).containsExactly(3f, -4f);
    }
  }
}
