package io.kiln.runtime.scheduling;

import java.util.Arrays;

/**
 * Scores with the shape slots they belong to, sorted ascending by score: {@link PlacementIndex}'s ranking of
 * utilisations. Scores are the raw bits of non-negative doubles, which order as the doubles do, so a
 * least-significant-digit radix sort of the bits sorts them in time linear in their number (a digit every
 * score shares is skipped); below {@link #RADIX_MIN} scores an insertion sort is cheaper than clearing the
 * counts. Stable. Reused across placements; not thread-safe.
 */
final class ScoreSort {

  private static final int RADIX_BITS = 11;
  private static final int RADIX = 1 << RADIX_BITS;
  private static final int RADIX_MIN = 64;

  private long[] keys = new long[16];
  private int[] slots = new int[16];
  private long[] keysSwap = new long[16];
  private int[] slotsSwap = new int[16];
  private final int[] digitStarts = new int[RADIX + 1];
  private int size;

  /** Empties it, with room for {@code capacity} scores. */
  void clear(int capacity) {
    if (keys.length < capacity) {
      keys = new long[capacity];
      slots = new int[capacity];
      keysSwap = new long[capacity];
      slotsSwap = new int[capacity];
    }
    size = 0;
  }

  void add(long scoreBits, int slot) {
    keys[size] = scoreBits;
    slots[size++] = slot;
  }

  int size() {
    return size;
  }

  /** The {@code i}-th score's bits, after {@link #sort}. */
  long key(int i) {
    return keys[i];
  }

  /** The {@code i}-th score's slot, after {@link #sort}. */
  int slot(int i) {
    return slots[i];
  }

  void sort() {
    if (size < RADIX_MIN) {
      insertionSort();
      return;
    }
    long or = 0;
    long and = -1;
    for (int i = 0; i < size; i++) {
      or |= keys[i];
      and &= keys[i];
    }
    long varying = or ^ and;
    for (int shift = 0; shift < Long.SIZE; shift += RADIX_BITS) {
      if (((varying >>> shift) & (RADIX - 1)) != 0) {
        pass(shift);
      }
    }
  }

  /** One stable counting pass on the digit at {@code shift}, from the arrays into the swap arrays. */
  private void pass(int shift) {
    Arrays.fill(digitStarts, 0);
    for (int i = 0; i < size; i++) {
      digitStarts[(int) ((keys[i] >>> shift) & (RADIX - 1)) + 1]++;
    }
    for (int d = 1; d <= RADIX; d++) {
      digitStarts[d] += digitStarts[d - 1];
    }
    for (int i = 0; i < size; i++) {
      int at = digitStarts[(int) ((keys[i] >>> shift) & (RADIX - 1))]++;
      keysSwap[at] = keys[i];
      slotsSwap[at] = slots[i];
    }
    long[] k = keys;
    keys = keysSwap;
    keysSwap = k;
    int[] s = slots;
    slots = slotsSwap;
    slotsSwap = s;
  }

  private void insertionSort() {
    for (int i = 1; i < size; i++) {
      long key = keys[i];
      int slot = slots[i];
      int j = i - 1;
      for (; j >= 0 && keys[j] > key; j--) {
        keys[j + 1] = keys[j];
        slots[j + 1] = slots[j];
      }
      keys[j + 1] = key;
      slots[j + 1] = slot;
    }
  }
}
