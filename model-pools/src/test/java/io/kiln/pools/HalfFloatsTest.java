package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HalfFloatsTest {

  @Test
  void knownFp16Encodings() {
    assertThat(HalfFloats.toFp16(0f)).isEqualTo((short) 0x0000);
    assertThat(HalfFloats.toFp16(-0f)).isEqualTo((short) 0x8000);
    assertThat(HalfFloats.toFp16(1f)).isEqualTo((short) 0x3c00);
    assertThat(HalfFloats.toFp16(-2f)).isEqualTo((short) 0xc000);
    assertThat(HalfFloats.toFp16(65504f)).isEqualTo((short) 0x7bff);
    assertThat(HalfFloats.toFp16(0x1p-14f)).isEqualTo((short) 0x0400); // smallest normal
    assertThat(HalfFloats.toFp16(0x1p-24f)).isEqualTo((short) 0x0001); // smallest subnormal
    assertThat(HalfFloats.toFp16(Float.POSITIVE_INFINITY)).isEqualTo((short) 0x7c00);
    assertThat(HalfFloats.toFp16(1e6f)).isEqualTo((short) 0x7c00);
    assertThat(Float.isNaN(HalfFloats.fromFp16(HalfFloats.toFp16(Float.NaN)))).isTrue();
  }

  @Test
  void fp16RoundsToNearestEven() {
    // 1 + 2^-11 is halfway between 1 and the next FP16 (1 + 2^-10): ties go to the even mantissa, 1.
    assertThat(HalfFloats.toFp16(1f + 0x1p-11f)).isEqualTo((short) 0x3c00);
    // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
    assertThat(HalfFloats.toFp16(1f + 3 * 0x1p-11f)).isEqualTo((short) 0x3c02);
    // Just above halfway rounds up.
    assertThat(HalfFloats.toFp16(Math.nextUp(1f + 0x1p-11f))).isEqualTo((short) 0x3c01);
    // 65520 is halfway between the largest finite FP16 and infinity: rounds to infinity (even).
    assertThat(HalfFloats.toFp16(65520f)).isEqualTo((short) 0x7c00);
    // 2^-25 is halfway between 0 and the smallest subnormal: rounds to 0.
    assertThat(HalfFloats.toFp16(0x1p-25f)).isEqualTo((short) 0);
    assertThat(HalfFloats.toFp16(Math.nextUp(0x1p-25f))).isEqualTo((short) 1);
  }

  @Test
  void everyFp16ValueSurvivesARoundTrip() {
    for (int bits = 0; bits <= 0xffff; bits++) {
      short h = (short) bits;
      float f = HalfFloats.fromFp16(h);
      if (Float.isNaN(f)) {
        continue;
      }
      assertThat(HalfFloats.toFp16(f)).as("bits %04x", bits).isEqualTo(h);
    }
  }

  @Test
  void bf16KeepsTheTopHalfRounded() {
    assertThat(HalfFloats.toBf16(1f)).isEqualTo((short) 0x3f80);
    assertThat(HalfFloats.fromBf16((short) 0xc020)).isEqualTo(-2.5f);
    for (int bits = 0; bits <= 0xffff; bits++) {
      float f = HalfFloats.fromBf16((short) bits);
      if (!Float.isNaN(f)) {
        assertThat(HalfFloats.toBf16(f)).isEqualTo((short) bits);
      }
    }
    assertThat(Float.isNaN(HalfFloats.fromBf16(HalfFloats.toBf16(Float.NaN)))).isTrue();
  }
}
