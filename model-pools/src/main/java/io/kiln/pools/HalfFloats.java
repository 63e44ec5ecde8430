package io.kiln.pools;

/**
 * IEEE 754 binary16 (FP16) and bfloat16 (BF16) conversions; Java 17 has neither (Float.floatToFloat16
 * arrived in Java 20). Both round to nearest, ties to even, like the hardware and NumPy. Used by the gateway's
 * decoders and encoders and by warm-up samples. Stateless.
 */
public final class HalfFloats {

  private HalfFloats() {
  }

  /** The FP16 bits nearest to {@code f}; overflow gives infinity, NaN stays NaN. */
  public static short toFp16(float f) {
    int bits = Float.floatToRawIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int abs = bits & 0x7fffffff;
    if (abs >= 0x7f800000) {
      // Infinity stays infinity; NaN keeps its top payload bits and stays quiet.
      return (short) (sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 | ((abs >>> 13) & 0x3ff) : 0));
    }
    if (abs >= 0x47800000) {
      return (short) (sign | 0x7c00);
    }
    int exp = abs >>> 23;
    if (exp >= 113) {
      // Normal FP16: rebias the exponent (127 -> 15) and round away the 13 low mantissa bits; a carry out
      // of the mantissa correctly bumps the exponent, up to infinity.
      int h = (abs - (112 << 23)) >>> 13;
      int rest = abs & 0x1fff;
      if (rest > 0x1000 || (rest == 0x1000 && (h & 1) != 0)) {
        h++;
      }
      return (short) (sign | h);
    }
    if (exp < 102) {
      return (short) sign;
    }
    // Subnormal FP16: value = m * 2^-24 with the implicit leading one made explicit.
    int mant = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - exp;
    int h = mant >>> shift;
    int rest = mant & ((1 << shift) - 1);
    int half = 1 << (shift - 1);
    if (rest > half || (rest == half && (h & 1) != 0)) {
      h++;
    }
    return (short) (sign | h);
  }

  public static float fromFp16(short h) {
    int bits = h & 0xffff;
    int sign = (bits & 0x8000) << 16;
    int exp = (bits >>> 10) & 0x1f;
    int mant = bits & 0x3ff;
    if (exp == 0) {
      float v = mant * 0x1p-24f;
      return sign != 0 ? -v : v;
    }
    if (exp == 31) {
      return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
    }
    return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }

  /** The BF16 bits nearest to {@code f}: its top 16 bits, rounded. */
  public static short toBf16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      return (short) ((bits >>> 16) | 0x40);
    }
    int rounded = bits + 0x7fff + ((bits >>> 16) & 1);
    return (short) (rounded >>> 16);
  }

  public static float fromBf16(short b) {
    return Float.intBitsToFloat((b & 0xffff) << 16);
  }
}
