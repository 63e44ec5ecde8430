package io.kiln.runtime.scheduling;

import io.kiln.runtime.Resources;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@link PlacementIndex}'s per-shape scoring of one request: owns the request's dense form (loaded by
 * {@link #prepare}), the fit and utilisation arithmetic over a {@link ShapeTable.Shape}'s primitive arrays,
 * and the memos that keep each of the last few distinct requests' scores per shape while the shape lives.
 * Not thread-safe: the index's monitor guards it, like the shape table it reads.
 */
final class ShapeScores {

  /** A memo's score for a shape the request does not fit (real scores are non-negative doubles' bits). */
  static final long NO_FIT_BITS = -1;
  /** Requests (resources and kind) whose per-shape scores are kept; the least recently used goes. */
  private static final int MEMOS = 8;

  private final ShapeTable shapes;
  private final Map<MemoKey, Memo> memos = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<MemoKey, Memo> eldest) {
      return size() > MEMOS;
    }
  };
  private long[] needDense = new long[0];
  private int[] needKeys = new int[0];
  private long[] needUnits = new long[0];

  /** What a memo is for: a request's resources, scored for DEFAULT (after placing) or SPREAD (now). */
  private record MemoKey(Resources need, boolean spread) {
  }

  /**
   * One request's score per shape slot, {@link #NO_FIT_BITS} where it does not fit: valid where
   * {@code shape[slot]} is the id of the shape now in the slot (a freed slot's next shape has a new id).
   */
  static final class Memo {
    long[] shape = new long[0];
    long[] bits = new long[0];
  }

  ShapeScores(ShapeTable shapes) {
    this.shapes = shapes;
  }

  /** The memo of this request's scores, sized to the slots. */
  Memo memo(Resources need, boolean spread) {
    Memo m = memos.computeIfAbsent(new MemoKey(need, spread), k -> new Memo());
    if (m.shape.length < shapes.capacity()) {
      m.shape = Arrays.copyOf(m.shape, shapes.capacity());
      m.bits = Arrays.copyOf(m.bits, shapes.capacity());
    }
    return m;
  }

  /**
   * The shape's utilisation (after placing the prepared request when {@code afterPlacing}, else now) as raw
   * bits, or {@link #NO_FIT_BITS}: from the memo when it scored this shape for this request, else scored and
   * remembered.
   */
  long scoreBits(Memo memo, int slot, ShapeTable.Shape s, boolean afterPlacing) {
    if (memo.shape[slot] == s.id) {
      return memo.bits[slot];
    }
    long bits = fits(s) ? Double.doubleToRawLongBits(utilisation(s, afterPlacing ? needDense : null)) : NO_FIT_BITS;
    memo.shape[slot] = s.id;
    memo.bits[slot] = bits;
    return bits;
  }

  /** Loads the request into the dense scratch arrays; false when it needs a key no node has ever had. */
  boolean prepare(Resources need) {
    Map<String, Long> units = need.units();
    if (needDense.length != shapes.keyCount()) {
      needDense = new long[shapes.keyCount()];
    } else {
      Arrays.fill(needDense, 0);
    }
    if (needKeys.length != units.size()) {
      needKeys = new int[units.size()];
      needUnits = new long[units.size()];
    }
    int j = 0;
    for (Map.Entry<String, Long> e : units.entrySet()) {
      Integer k = shapes.keyIndex(e.getKey());
      if (k == null) {
        return false; // every node has 0 of it, and the request asks for more than 0
      }
      needDense[k] = e.getValue();
      needKeys[j] = k;
      needUnits[j++] = e.getValue();
    }
    return true;
  }

  private boolean fits(ShapeTable.Shape s) {
    for (int j = 0; j < needKeys.length; j++) {
      int k = needKeys[j];
      long available = k < s.avail.length ? s.avail[k] : 0;
      if (needUnits[j] > available) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@link io.kiln.runtime.NodeView#utilisationAfter} on primitive arrays, with the same arithmetic (the same
   * doubles, so the same order and ties); {@code extra} null for none.
   */
  private static double utilisation(ShapeTable.Shape s, long[] extra) {
    double max = 0;
    long[] tot = s.tot;
    for (int k = 0; k < tot.length; k++) {
      long t = tot[k];
      if (t <= 0) {
        continue;
      }
      long used = t - s.avail[k] + (extra == null || k >= extra.length ? 0 : extra[k]);
      max = Math.max(max, Math.min(1.0, used / (double) t));
    }
    return max;
  }
}
