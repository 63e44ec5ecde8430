package io.kiln.gateway.impl;

import java.math.BigInteger;

/**
 * Prints a finite float as the shortest decimal that reads back as the same float, in {@code Float.toString}'s
 * layout — the digits Jackson's fast writer ({@code FloatToDecimal}) prints, written straight into a
 * {@link ByteSink} instead of a new String per value. This is Raffaello Giulietti's Schubfach algorithm for
 * binary32 as Jackson 2.18 and the JDK 19+ carry it ({@code FloatToDecimal}, MIT/GPLv2+CE), transcribed with
 * the same constants; the 10^-k table it needs for floats (77 entries) is computed at class load from its
 * definition rather than copied. Tested value for value against Jackson's. Stateless.
 */
final class FloatFormat {

  private static final int P = 24;
  private static final int Q_MIN = -149;
  private static final int C_MIN = 1 << (P - 1);
  private static final int C_TINY = 8;
  private static final int BQ_MASK = 0xff;
  private static final int T_MASK = (1 << (P - 1)) - 1;
  private static final long MASK_32 = 0xffffffffL;
  private static final int MASK_28 = (1 << 28) - 1;
  private static final int H = 9;
  static final int K_MIN = -45;
  static final int K_MAX = 31;

  /** g1(k) for k in [K_MIN, K_MAX]: the high 63 bits of floor(beta) + 1, where 10^-k = beta 2^r, 2^125 <= beta < 2^126. */
  private static final long[] G1 = new long[K_MAX - K_MIN + 1];
  private static final long[] POW10 = new long[H + 1];

  static {
    for (int k = K_MIN; k <= K_MAX; k++) {
      G1[k - K_MIN] = g1Exact(k);
    }
    POW10[0] = 1;
    for (int i = 1; i <= H; i++) {
      POW10[i] = POW10[i - 1] * 10;
    }
  }

  private FloatFormat() {
  }

  static long g1Exact(int k) {
    // 10^-k as num / den; find r with 2^125 <= 10^-k / 2^r < 2^126, then floor(10^-k / 2^r) + 1.
    BigInteger num = k <= 0 ? BigInteger.TEN.pow(-k) : BigInteger.ONE;
    BigInteger den = k <= 0 ? BigInteger.ONE : BigInteger.TEN.pow(k);
    int r = num.bitLength() - den.bitLength() - 126;
    while (true) {
      BigInteger beta = r >= 0 ? num.divide(den.shiftLeft(r)) : num.shiftLeft(-r).divide(den);
      if (beta.bitLength() > 126) {
        r++;
      } else if (beta.bitLength() < 126) {
        r--;
      } else {
        return beta.add(BigInteger.ONE).shiftRight(63).longValueExact();
      }
    }
  }

  /** Writes {@code v}, which must be finite. */
  static void put(ByteSink out, float v) {
    int bits = Float.floatToRawIntBits(v);
    int t = bits & T_MASK;
    int bq = (bits >>> (P - 1)) & BQ_MASK;
    if (bq == BQ_MASK) {
      throw new IllegalArgumentException("not finite: " + v);
    }
    out.ensure(16);
    if (bits < 0) {
      out.put((byte) '-');
    }
    if (bq != 0) {
      int mq = -Q_MIN + 1 - bq;
      int c = C_MIN | t;
      if (0 < mq && mq < P) {
        int f = c >> mq;
        if (f << mq == c) {
          chars(out, f, 0);
          return;
        }
      }
      decimal(out, -mq, c, 0);
    } else if (t != 0) {
      if (t < C_TINY) {
        decimal(out, Q_MIN, 10 * t, -1);
      } else {
        decimal(out, Q_MIN, t, 0);
      }
    } else {
      out.putAscii("0.0");
    }
  }

  private static void decimal(ByteSink out, int q, int c, int dk) {
    int outBit = c & 0x1;
    long cb = (long) c << 2;
    long cbr = cb + 2;
    long cbl;
    int k;
    if (c != C_MIN || q == Q_MIN) {
      cbl = cb - 2;
      k = flog10pow2(q);
    } else {
      cbl = cb - 1;
      k = flog10threeQuartersPow2(q);
    }
    int h = q + flog2pow10(-k) + 33;
    long g = G1[k - K_MIN] + 1;
    int vb = rop(g, cb << h);
    int vbl = rop(g, cbl << h);
    int vbr = rop(g, cbr << h);
    int s = vb >> 2;
    if (s >= 100) {
      int sp10 = 10 * (int) (s * 1_717_986_919L >>> 34);
      int tp10 = sp10 + 10;
      boolean upin = vbl + outBit <= sp10 << 2;
      boolean wpin = (tp10 << 2) + outBit <= vbr;
      if (upin != wpin) {
        chars(out, upin ? sp10 : tp10, k);
        return;
      }
    }
    int t = s + 1;
    boolean uin = vbl + outBit <= s << 2;
    boolean win = (t << 2) + outBit <= vbr;
    if (uin != win) {
      chars(out, uin ? s : t, k + dk);
      return;
    }
    int cmp = vb - ((s + t) << 1);
    chars(out, cmp < 0 || cmp == 0 && (s & 0x1) == 0 ? s : t, k + dk);
  }

  private static int rop(long g, long cp) {
    long x1 = Math.multiplyHigh(g, cp);
    long vbp = x1 >>> 31;
    return (int) (vbp | ((x1 & MASK_32) + MASK_32) >>> 32);
  }

  /** f 10^e, f having at most 9 digits. */
  private static void chars(ByteSink out, int f, int e) {
    int len = flog10pow2(Integer.SIZE - Integer.numberOfLeadingZeros(f));
    if (f >= POW10[len]) {
      len += 1;
    }
    f *= (int) POW10[H - len];
    e += len;
    int h = (int) (f * 1_441_151_881L >>> 57);
    int l = f - 100_000_000 * h;
    // Straight into the sink's array (put() ensured the room: at most 15 characters after the sign).
    byte[] buf = out.array();
    int at = out.length();
    int end;
    if (0 < e && e <= 7) {
      end = chars1(buf, at, h, l, e);
    } else if (-3 < e && e <= 0) {
      end = chars2(buf, at, h, l, e);
    } else {
      end = chars3(buf, at, h, l, e);
    }
    out.advance(end - at);
  }

  private static int chars1(byte[] buf, int i, int h, int l, int e) {
    buf[i++] = (byte) ('0' + h);
    int y = y(l);
    int d = 1;
    for (; d < e; ++d) {
      int t = 10 * y;
      buf[i++] = (byte) ('0' + (t >>> 28));
      y = t & MASK_28;
    }
    buf[i++] = '.';
    for (; d <= 8; ++d) {
      int t = 10 * y;
      buf[i++] = (byte) ('0' + (t >>> 28));
      y = t & MASK_28;
    }
    return trimZeroes(buf, i);
  }

  private static int chars2(byte[] buf, int i, int h, int l, int e) {
    buf[i++] = '0';
    buf[i++] = '.';
    for (; e < 0; ++e) {
      buf[i++] = '0';
    }
    buf[i++] = (byte) ('0' + h);
    i = eightDigits(buf, i, l);
    return trimZeroes(buf, i);
  }

  private static int chars3(byte[] buf, int i, int h, int l, int e) {
    buf[i++] = (byte) ('0' + h);
    buf[i++] = '.';
    i = eightDigits(buf, i, l);
    i = trimZeroes(buf, i);
    buf[i++] = 'E';
    int x = e - 1;
    if (x < 0) {
      buf[i++] = '-';
      x = -x;
    }
    if (x < 10) {
      buf[i++] = (byte) ('0' + x);
    } else {
      int d = x * 103 >>> 10;
      buf[i++] = (byte) ('0' + d);
      buf[i++] = (byte) ('0' + x - 10 * d);
    }
    return i;
  }

  private static int eightDigits(byte[] buf, int i, int m) {
    int y = y(m);
    for (int d = 0; d < 8; ++d) {
      int t = 10 * y;
      buf[i++] = (byte) ('0' + (t >>> 28));
      y = t & MASK_28;
    }
    return i;
  }

  /** Drops trailing zeroes, but keeps the one right after the point. */
  private static int trimZeroes(byte[] buf, int end) {
    int i = end - 1;
    while (buf[i] == '0') {
      --i;
    }
    if (buf[i] == '.') {
      ++i;
    }
    return i + 1;
  }

  private static int y(int a) {
    return (int) (Math.multiplyHigh((long) (a + 1) << 28, 193_428_131_138_340_668L) >>> 20) - 1;
  }

  private static int flog10pow2(int e) {
    return (int) (e * 661_971_961_083L >> 41);
  }

  private static int flog10threeQuartersPow2(int e) {
    return (int) (e * 661_971_961_083L + -274_743_187_321L >> 41);
  }

  private static int flog2pow10(int e) {
    return (int) (e * 913_124_641_741L >> 38);
  }
}
