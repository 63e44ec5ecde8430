package io.kiln.gateway.impl;

import java.nio.charset.StandardCharsets;

/**
 * A cursor over the bytes of a JSON document for {@link SinglePassJsonDecoder}: whitespace, punctuation,
 * ASCII strings, numbers and literals, read in place (no copy of the body, no tokens, no boxing). It accepts
 * a strict subset of what Jackson accepts with the gateway's settings, and throws {@link Bail} at anything else
 * — malformed JSON, but also anything legal it does not read itself (escapes, non-ASCII strings, integers of 19
 * digits or more, numbers over 100 characters, objects where a value is skipped) — so that the caller can hand
 * the body to the Jackson decoder, which gives every error its message. Not thread-safe; one per document.
 */
final class JsonScanner {

  /** The document is not one this scanner reads; decode it the other way. Carries no stack or message. */
  static final class Bail extends RuntimeException {
    static final Bail INSTANCE = new Bail();

    private Bail() {
      super(null, null, false, false);
    }
  }

  private static final int MAX_NUMBER_CHARS = 100;
  /** Nesting a skipped value may have; well inside Jackson's limit of 64 for the whole document. */
  private static final int MAX_DEPTH = 32;
  private static final double[] POW10 = {
      1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
      1e20, 1e21, 1e22};

  final byte[] bytes;
  int pos;
  final int end;

  /** The last number read: an integer token (no fraction, no exponent), its value, and its value as a double. */
  boolean numberIsInt;
  long numberLong;
  double numberDouble;

  private int keyStart;
  private int keyLength;

  JsonScanner(byte[] bytes, int offset, int length) {
    this.bytes = bytes;
    this.pos = offset;
    this.end = offset + length;
  }

  static Bail bail() {
    return Bail.INSTANCE;
  }

  /** The next non-whitespace byte (0..255), not consumed; -1 at the end. */
  int peek() {
    while (pos < end) {
      byte c = bytes[pos];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        return c & 0xff; // unsigned: a byte of 0x80 or above is content (and bails), never the end
      }
      pos++;
    }
    return -1;
  }

  /** Consumes the next non-whitespace byte, which must be {@code c}. */
  void expect(char c) {
    if (peek() != c) {
      throw bail();
    }
    pos++;
  }

  /** Consumes {@code c} if it is next and says whether it was. */
  boolean consume(char c) {
    if (peek() == c) {
      pos++;
      return true;
    }
    return false;
  }

  /** After a member or an element: consumes ',' (true: another follows) or {@code close} (false). */
  boolean more(char close) {
    int c = peek();
    pos++;
    if (c == ',') {
      return true;
    }
    if (c == close) {
      return false;
    }
    throw bail();
  }

  boolean atEnd() {
    return peek() < 0;
  }

  /** Reads an object member's name and its ':'; compare it with {@link #keyIs}. */
  void key() {
    expect('"');
    keyStart = pos;
    keyLength = asciiRun();
    pos++;
    expect(':');
  }

  boolean keyIs(byte[] name) {
    if (name.length != keyLength) {
      return false;
    }
    for (int i = 0; i < keyLength; i++) {
      if (bytes[keyStart + i] != name[i]) {
        return false;
      }
    }
    return true;
  }

  String keyString() {
    return new String(bytes, keyStart, keyLength, StandardCharsets.ISO_8859_1);
  }

  /** A string value (printable ASCII without escapes; anything else bails). */
  String string() {
    expect('"');
    int start = pos;
    int n = asciiRun();
    pos++;
    // Only bytes 0x20..0x7e got here, so Latin-1 decodes them exactly (and without a decoder).
    return new String(bytes, start, n, StandardCharsets.ISO_8859_1);
  }

  /** Like {@link #string()}, as a BYTES element: its 4-byte little-endian length and bytes appended to {@code out}. */
  int stringInto(ByteSink out) {
    expect('"');
    int start = pos;
    int n = asciiRun();
    pos++;
    out.putIntLE(n);
    out.put(bytes, start, n);
    return n;
  }

  /** From after an opening quote to the closing one (left unconsumed); its length. */
  private int asciiRun() {
    int start = pos;
    while (true) {
      if (pos >= end) {
        throw bail();
      }
      byte c = bytes[pos];
      if (c == '"') {
        return pos - start;
      }
      // Escapes, control characters and non-ASCII (negative bytes): Jackson's job.
      if (c == '\\' || c < 0x20 || c == 0x7f) {
        throw bail();
      }
      pos++;
    }
  }

  /** true or false. */
  boolean bool() {
    int c = peek();
    if (c == 't' && literal("true")) {
      return true;
    }
    if (c == 'f' && literal("false")) {
      return false;
    }
    throw bail();
  }

  private boolean literal(String word) {
    int n = word.length();
    if (end - pos < n) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (bytes[pos + i] != word.charAt(i)) {
        return false;
      }
    }
    pos += n;
    delimited();
    return true;
  }

  /**
   * Reads a JSON number (strict grammar: no '+', no leading zeros, digits on both sides of '.'). Sets
   * {@link #numberIsInt}, {@link #numberLong} (integers of up to 18 digits; longer ones bail) and
   * {@link #numberDouble}, correctly rounded as {@code Double.parseDouble} would.
   */
  void number() {
    peek();
    int start = pos;
    boolean negative = false;
    if (pos < end && bytes[pos] == '-') {
      negative = true;
      pos++;
    }
    long mantissa = 0;
    int significant = 0;
    int exp10 = 0;
    boolean exact = true;
    if (pos >= end) {
      throw bail();
    }
    byte c = bytes[pos];
    if (c == '0') {
      pos++;
      if (pos < end && isDigit(bytes[pos])) {
        throw bail();
      }
    } else if (c >= '1' && c <= '9') {
      while (pos < end && isDigit(bytes[pos])) {
        if (significant < 18) {
          mantissa = mantissa * 10 + (bytes[pos] - '0');
          significant++;
        } else {
          exact = false;
        }
        pos++;
      }
    } else {
      throw bail();
    }
    boolean isInt = true;
    if (pos < end && bytes[pos] == '.') {
      isInt = false;
      pos++;
      int digits = pos;
      while (pos < end && isDigit(bytes[pos])) {
        int d = bytes[pos] - '0';
        if (mantissa == 0 && d == 0) {
          exp10--;
        } else if (significant < 18) {
          mantissa = mantissa * 10 + d;
          significant++;
          exp10--;
        } else {
          exact = false;
        }
        pos++;
      }
      if (pos == digits) {
        throw bail();
      }
    }
    if (pos < end && (bytes[pos] == 'e' || bytes[pos] == 'E')) {
      isInt = false;
      pos++;
      boolean negativeExp = false;
      if (pos < end && (bytes[pos] == '+' || bytes[pos] == '-')) {
        negativeExp = bytes[pos] == '-';
        pos++;
      }
      int digits = pos;
      int e = 0;
      while (pos < end && isDigit(bytes[pos])) {
        if (e < 100_000) {
          e = e * 10 + (bytes[pos] - '0');
        }
        pos++;
      }
      if (pos == digits) {
        throw bail();
      }
      exp10 += negativeExp ? -e : e;
    }
    int length = pos - start;
    if (length > MAX_NUMBER_CHARS) {
      throw bail();
    }
    delimited();
    numberIsInt = isInt;
    if (isInt) {
      if (!exact) {
        throw bail(); // 19 digits and more: Jackson decides between long and BigInteger
      }
      numberLong = negative ? -mantissa : mantissa;
      numberDouble = numberLong;
    } else if (exact && significant <= 15 && exp10 >= -22 && exp10 <= 22) {
      // Exact operands and one correctly rounded operation (Clinger's fast path).
      double v = mantissa;
      v = exp10 >= 0 ? v * POW10[exp10] : v / POW10[-exp10];
      numberDouble = negative ? -v : v;
    } else {
      numberDouble = Double.parseDouble(new String(bytes, start, length, StandardCharsets.ISO_8859_1));
    }
  }

  /** Skips a value the decoder does not read: strings, numbers, literals and arrays of them; objects bail. */
  void skipValue(int depth) {
    if (depth > MAX_DEPTH) {
      throw bail();
    }
    int c = peek();
    switch (c) {
      case '"' -> string();
      case 't', 'f' -> bool();
      case 'n' -> {
        if (!literal("null")) {
          throw bail();
        }
      }
      case '[' -> {
        pos++;
        if (consume(']')) {
          return;
        }
        do {
          skipValue(depth + 1);
        } while (more(']'));
      }
      default -> number();
    }
  }

  /** A number or literal must be followed by whitespace, punctuation or the end. */
  private void delimited() {
    if (pos < end) {
      byte c = bytes[pos];
      if (c != ',' && c != ']' && c != '}' && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        throw bail();
      }
    }
  }

  private static boolean isDigit(byte c) {
    return c >= '0' && c <= '9';
  }
}
