package io.kiln.gateway.support;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded generator of hostile variants of valid inputs: truncation, byte flips, inserted and deleted
 * bytes, numbers made huge or negative, deep nesting, values of the wrong type, and spliced documents. The
 * same seed gives the same sequence, so a failure is reproduced by its seed and iteration. Not thread-safe.
 */
public final class Mutator {

  static final List<String> NUMBERS = List.of("-1", "0", "2147483647", "2147483648", "-2147483648",
      "9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999999999999",
      "1e308", "1e309", "-1e309", "1.5", "NaN", "Infinity", "0x10", "00", "1e-400", "4294967296", "1000000000");
  static final List<String> VALUES = List.of("null", "true", "\"\"", "\"x\"", "{}", "[]", "[[]]", "{\"a\":1}",
      "[1,[2,[3]]]", "\"\\u0000\"", "\"\\ud800\"", "-", "[1,", "{\"", "\"FP32\"", "\"BYTES\"", "[-1]",
      "[1000000000,1000000000]", "[9223372036854775807]", "[0]", "[]");
  static final List<String> TOKENS = List.of("{", "}", "[", "]", ",", ":", "\"", "\\", "\u00e9", "\uffff",
      "\"shape\":", "\"data\":", "\"datatype\":", "\"binary_data_size\":", "\"inputs\":", "\"parameters\":");

  private final SplittableRandom random;

  public Mutator(long seed) {
    this.random = new SplittableRandom(seed);
  }

  public int nextInt(int bound) {
    return random.nextInt(bound);
  }

  public <T> T pick(List<T> items) {
    return items.get(random.nextInt(items.size()));
  }

  /** One to three mutations of {@code seed} (occasionally spliced with {@code other}). */
  public byte[] mutate(byte[] seed, byte[] other) {
    byte[] out = seed;
    int rounds = 1 + random.nextInt(3);
    for (int i = 0; i < rounds; i++) {
      out = once(out, other);
    }
    return out;
  }

  private byte[] once(byte[] in, byte[] other) {
    if (in.length == 0) {
      return pick(VALUES).getBytes(StandardCharsets.UTF_8);
    }
    int at = random.nextInt(in.length);
    return switch (random.nextInt(11)) {
      case 0 -> Arrays.copyOf(in, at); // truncated
      case 1 -> { // byte flips
        byte[] out = in.clone();
        for (int n = 1 + random.nextInt(4); n > 0; n--) {
          out[random.nextInt(out.length)] ^= (byte) (1 << random.nextInt(8));
        }
        yield out;
      }
      case 2 -> { // random bytes
        byte[] out = in.clone();
        for (int n = 1 + random.nextInt(4); n > 0; n--) {
          out[random.nextInt(out.length)] = (byte) random.nextInt(256);
        }
        yield out;
      }
      case 3 -> replaceNumber(in, pick(NUMBERS));
      case 4 -> replaceValueAfterColon(in, pick(VALUES));
      case 5 -> insert(in, at, pick(TOKENS).getBytes(StandardCharsets.UTF_8));
      case 6 -> { // deep nesting
        int depth = 1 + random.nextInt(5000);
        String open = random.nextBoolean() ? "[" : "{\"a\":";
        yield insert(in, at, open.repeat(depth).getBytes(StandardCharsets.UTF_8));
      }
      case 7 -> { // deleted span
        int len = 1 + random.nextInt(Math.min(16, in.length - at));
        byte[] out = new byte[in.length - len];
        System.arraycopy(in, 0, out, 0, at);
        System.arraycopy(in, at + len, out, at, in.length - at - len);
        yield out;
      }
      case 8 -> { // spliced with another document
        byte[] out = Arrays.copyOf(in, at + (other.length - Math.min(other.length, at)));
        System.arraycopy(other, Math.min(other.length, at), out, at, other.length - Math.min(other.length, at));
        yield out;
      }
      case 9 -> { // duplicated span
        int len = 1 + random.nextInt(Math.min(64, in.length - at));
        yield insert(in, at, Arrays.copyOfRange(in, at, at + len));
      }
      default -> replaceNumber(in, Long.toString(random.nextLong()));
    };
  }

  private static byte[] insert(byte[] in, int at, byte[] what) {
    byte[] out = new byte[in.length + what.length];
    System.arraycopy(in, 0, out, 0, at);
    System.arraycopy(what, 0, out, at, what.length);
    System.arraycopy(in, at, out, at + what.length, in.length - at);
    return out;
  }

  /** Replaces a random run of ASCII digits (a number in JSON or YAML) with {@code number}. */
  private byte[] replaceNumber(byte[] in, String number) {
    int start = random.nextInt(in.length);
    while (start < in.length && !Character.isDigit(in[start])) {
      start++;
    }
    if (start == in.length) {
      return in;
    }
    int end = start;
    while (end < in.length && (Character.isDigit(in[end]) || in[end] == '.')) {
      end++;
    }
    byte[] n = number.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[in.length - (end - start) + n.length];
    System.arraycopy(in, 0, out, 0, start);
    System.arraycopy(n, 0, out, start, n.length);
    System.arraycopy(in, end, out, start + n.length, in.length - end);
    return out;
  }

  /** Replaces the value after a random {@code :} up to the next {@code ,} or {@code }} with {@code value}. */
  private byte[] replaceValueAfterColon(byte[] in, String value) {
    int colon = random.nextInt(in.length);
    while (colon < in.length && in[colon] != ':') {
      colon++;
    }
    if (colon >= in.length - 1) {
      return in;
    }
    int end = colon + 1;
    int depth = 0;
    while (end < in.length) {
      byte b = in[end];
      if (b == '[' || b == '{') {
        depth++;
      } else if (b == ']' || b == '}') {
        if (depth == 0) {
          break;
        }
        depth--;
      } else if ((b == ',' || b == '\n') && depth == 0) {
        break;
      }
      end++;
    }
    byte[] v = value.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[in.length - (end - colon - 1) + v.length];
    System.arraycopy(in, 0, out, 0, colon + 1);
    System.arraycopy(v, 0, out, colon + 1, v.length);
    System.arraycopy(in, end, out, colon + 1 + v.length, in.length - end);
    return out;
  }
}
