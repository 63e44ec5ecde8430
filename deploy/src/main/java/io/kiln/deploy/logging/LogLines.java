package io.kiln.deploy.logging;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The last lines this process logged, as written, numbered from 1: what {@code kiln logs} and
 * {@code GET /api/v1/logs} read, wherever the process's output goes (a file, a pod's stdout). Bounded by
 * {@link #MAX_LINES} lines and {@link #MAX_BYTES} characters; the oldest go first. Thread-safe.
 */
public final class LogLines {

  public static final int MAX_LINES = 10_000;
  public static final long MAX_BYTES = 4L << 20;
  /** A line longer than this is cut (and says so). */
  public static final int MAX_LINE = 16 * 1024;

  /**
   * Lines after a sequence number.
   *
   * @param next the sequence number to ask after next time
   * @param skipped lines that were asked for but are gone (older than the buffer holds)
   */
  public record Chunk(List<String> lines, long next, long skipped) {
  }

  private record Line(long seq, String text) {
  }

  private final ArrayDeque<Line> lines = new ArrayDeque<>();
  private long last;
  private long chars;

  /** Appends one line (without its line end; a multi-line event is split). */
  public synchronized void add(String text) {
    String t = text.length() > MAX_LINE ? text.substring(0, MAX_LINE) + "… (cut)" : text;
    lines.addLast(new Line(++last, t));
    chars += t.length();
    while (lines.size() > MAX_LINES || chars > MAX_BYTES) {
      chars -= lines.removeFirst().text().length();
    }
  }

  /** Appends what a layout wrote, one line per line. */
  public void addAll(String formatted) {
    int from = 0;
    int n = formatted.length();
    while (from < n) {
      int nl = formatted.indexOf('\n', from);
      int end = nl < 0 ? n : nl;
      add(formatted.substring(from, end > from && formatted.charAt(end - 1) == '\r' ? end - 1 : end));
      from = end + 1;
    }
  }

  /** The last {@code max} lines. */
  public Chunk tail(int max) {
    return after(-1, max);
  }

  /**
   * Up to {@code max} lines after sequence number {@code after} (the oldest first); {@code after} negative means
   * the last {@code max} lines.
   */
  public Chunk after(long after, int max) {
    return after(after, max, Long.MAX_VALUE);
  }

  /**
   * {@link #after(long, int)}, at most {@code maxChars} characters in all: the newest lines when reading a tail,
   * the oldest (the next ones) when reading after a sequence number.
   */
  public synchronized Chunk after(long after, int max, long maxChars) {
    List<String> out = new ArrayList<>();
    if (lines.isEmpty() || max <= 0) {
      return new Chunk(out, Math.max(after, last), 0);
    }
    long first = lines.peekFirst().seq();
    long skipped = after < 0 ? 0 : Math.max(0, first - (after + 1));
    if (after < 0) {
      long chars = 0;
      for (java.util.Iterator<Line> it = lines.descendingIterator(); it.hasNext() && out.size() < max; ) {
        Line l = it.next();
        chars += l.text().length() + 1;
        if (chars > maxChars && !out.isEmpty()) {
          break;
        }
        out.add(l.text());
      }
      java.util.Collections.reverse(out);
      return new Chunk(out, last, 0);
    }
    long from = Math.max(first, after + 1);
    long chars = 0;
    long next = Math.max(after, first - 1);
    for (Line l : lines) {
      if (l.seq() < from) {
        continue;
      }
      if (out.size() >= max) {
        break;
      }
      chars += l.text().length() + 1;
      if (chars > maxChars && !out.isEmpty()) {
        break;
      }
      out.add(l.text());
      next = l.seq();
    }
    return new Chunk(out, next, skipped);
  }
}
