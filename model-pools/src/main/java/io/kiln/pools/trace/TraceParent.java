package io.kiln.pools.trace;

/**
 * A W3C Trace Context {@code traceparent} header value ({@code 00-<32 hex trace id>-<16 hex parent id>-<2 hex
 * flags>}), checked. {@link #parse} never throws: a malformed value is {@code null}, and the request starts a new
 * trace. Immutable.
 */
public final class TraceParent {

  /** The longest traceparent or tracestate Kiln accepts and carries (W3C: tracestate at most 512 characters). */
  public static final int MAX_LENGTH = 512;

  private final String value;

  private TraceParent(String value) {
    this.value = value;
  }

  /**
   * The header's value if it is a valid version-00 traceparent (or a later version's first 55 characters, as the
   * spec asks), else null: wrong length, non-hex or upper-case digits, an all-zero trace or parent id, version ff.
   */
  public static TraceParent parse(String header) {
    if (header == null) {
      return null;
    }
    String s = header.strip();
    if (s.length() < 55 || s.length() > MAX_LENGTH) {
      return null;
    }
    if (s.charAt(2) != '-' || s.charAt(35) != '-' || s.charAt(52) != '-') {
      return null;
    }
    if (!hex(s, 0, 2) || s.startsWith("ff") || !hex(s, 3, 35) || !hex(s, 36, 52) || !hex(s, 53, 55)) {
      return null;
    }
    if (s.startsWith("00") ? s.length() != 55 : s.length() > 55 && s.charAt(55) != '-') {
      return null;
    }
    if (zeros(s, 3, 35) || zeros(s, 36, 52)) {
      return null;
    }
    return new TraceParent(s.length() == 55 ? s : s.substring(0, 55));
  }

  /** A traceparent for {@code traceId} and {@code spanId} (lower-case hex, 32 and 16 digits). */
  public static TraceParent of(String traceId, String spanId, boolean sampled) {
    TraceParent t = parse("00-" + traceId + "-" + spanId + (sampled ? "-01" : "-00"));
    if (t == null) {
      throw new IllegalArgumentException("not a trace id and span id: " + traceId + ", " + spanId);
    }
    return t;
  }

  public String traceId() {
    return value.substring(3, 35);
  }

  /** The id of the span this one's sender made: the parent of spans made here. */
  public String parentId() {
    return value.substring(36, 52);
  }

  /** Whether the sender recorded its span (flag 01): Kiln records spans only under a sampled parent. */
  public boolean sampled() {
    return (Character.digit(value.charAt(54), 16) & 1) == 1;
  }

  /** The header value, version 00. */
  public String value() {
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TraceParent t && t.value.equals(value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }

  @Override
  public String toString() {
    return value;
  }

  private static boolean hex(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
        return false;
      }
    }
    return true;
  }

  private static boolean zeros(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      if (s.charAt(i) != '0') {
        return false;
      }
    }
    return true;
  }
}
