package io.kiln.pools.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/** BYTES data: offsets and malformed length prefixes, and RowStacker's stacking and slicing of uneven rows. */
class ByteElementsTest {

  @Test
  void offsetsWalkTheLengthPrefixes() {
    byte[] data = ByteElements.joinStrings(new String[] {"a", "", "héllo"});
    assertThat(data).hasSize(4 + 1 + 4 + 4 + 6);
    assertThat(ByteElements.offsets(data, 3, "x")).containsExactly(0, 5, 9, 19);
    assertThat(ByteElements.strings(new Tensor("t", DataType.BYTES, new long[] {3}, data)))
        .containsExactly("a", "", "héllo");
  }

  @Test
  void malformedDataIsRefusedNamingWhere() {
    assertThatThrownBy(() -> ByteElements.offsets(new byte[] {1, 0, 0}, 1, "input 'x'"))
        .hasMessage("input 'x': 1 BYTES elements need at least 4 bytes, the data has 3");
    assertThatThrownBy(() -> ByteElements.offsets(new byte[] {3, 0, 0, 0, 1, 2, 3, 0, 0}, 2, "input 'x'"))
        .hasMessage("input 'x': BYTES element 1 has a truncated 4-byte length");
    assertThatThrownBy(() -> ByteElements.offsets(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1}, 1, "x"))
        .hasMessage("x: BYTES element 0 claims 4294967295 bytes but only 1 remain");
    assertThatThrownBy(() -> ByteElements.offsets(new byte[] {0, 0, 0, 0, 7}, 1, "x"))
        .hasMessage("x: 1 bytes follow the last of 1 BYTES elements");
    assertThatThrownBy(() -> ByteElements.offsets(new byte[8], Integer.MAX_VALUE, "x"))
        .hasMessageContaining("2147483647 BYTES elements need at least");
  }

  @Test
  void unevenRowsStackAndSliceBackToEachRequestsOwn() {
    Tensor a = new Tensor("t", DataType.BYTES, new long[] {1, 2}, ByteElements.joinStrings(new String[] {"", "xyz"}));
    Tensor b = new Tensor("t", DataType.BYTES, new long[] {2, 2},
        ByteElements.joinStrings(new String[] {"long string here", "q", "é", ""}));
    Tensor c = new Tensor("t", DataType.BYTES, new long[] {1, 2}, ByteElements.joinStrings(new String[] {"m", "n"}));
    Tensor whole = RowStacker.stack("t", List.of(a, b, c));
    assertThat(whole.shape()).containsExactly(4, 2);
    assertThat(RowStacker.slice(whole, 4, 0, 1, "t")).isEqualTo(a);
    assertThat(RowStacker.slice(whole, 4, 1, 2, "t")).isEqualTo(b);
    assertThat(RowStacker.slice(whole, 4, 3, 1, "t")).isEqualTo(c);
    assertThat(RowStacker.slice(whole, 4, 0, 4, "t")).isEqualTo(whole);
  }
}
