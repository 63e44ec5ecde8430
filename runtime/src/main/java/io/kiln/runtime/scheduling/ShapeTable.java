package io.kiln.runtime.scheduling;

import io.kiln.runtime.Resources;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The <i>shapes</i> of a {@link PlacementIndex}'s alive nodes: their distinct (total, available) pairs, each
 * in a numbered slot with its quantities as primitive arrays by resource-key index and the number of nodes
 * that have it. A slot freed when its last node changes is reused by the next new shape, which gets a new
 * id, so an id names one shape for good. Not thread-safe (the index's monitor guards it).
 */
final class ShapeTable {

  /** One (total, available) pair; quantities by key index, 0 past the arrays' end. */
  static final class Shape {
    final Resources total;
    final int slot;
    final long id;
    final long[] tot;
    final long[] avail;
    int count;
    private final Key key;

    private Shape(Key key, int slot, long id, long[] tot, long[] avail) {
      this.key = key;
      this.total = key.total();
      this.slot = slot;
      this.id = id;
      this.tot = tot;
      this.avail = avail;
    }
  }

  private record Key(Resources total, Resources available) {
  }

  private final Map<String, Integer> keyIndex = new HashMap<>();
  private final Map<Key, Shape> byKey = new HashMap<>();
  private Shape[] bySlot = new Shape[16];
  private final ArrayDeque<Integer> freeSlots = new ArrayDeque<>();
  private int slotsUsed;
  private long lastId;

  /** The slot of this pair's shape, counting one more node in it (made on first use). */
  int acquire(Resources total, Resources available) {
    Key key = new Key(total, available);
    Shape s = byKey.get(key);
    if (s == null) {
      total.units().keySet().forEach(this::keyOf);
      available.units().keySet().forEach(this::keyOf);
      long[] tot = new long[keyIndex.size()];
      long[] avail = new long[keyIndex.size()];
      total.units().forEach((k, v) -> tot[keyIndex.get(k)] = v);
      available.units().forEach((k, v) -> avail[keyIndex.get(k)] = v);
      int slot = freeSlots.isEmpty() ? newSlot() : freeSlots.pop();
      s = new Shape(key, slot, ++lastId, tot, avail);
      byKey.put(key, s);
      bySlot[slot] = s;
    }
    s.count++;
    return s.slot;
  }

  /** One node fewer in the slot's shape; the slot is freed with its last node. */
  void release(int slot) {
    Shape s = bySlot[slot];
    if (--s.count == 0) {
      byKey.remove(s.key);
      bySlot[slot] = null;
      freeSlots.push(slot);
    }
  }

  /** Slots {@code 0..slots()-1} may hold shapes. */
  int slots() {
    return slotsUsed;
  }

  /** At least {@link #slots()}: what per-slot arrays are sized to. */
  int capacity() {
    return bySlot.length;
  }

  /** The slot's shape, or null for a free slot. */
  Shape at(int slot) {
    return bySlot[slot];
  }

  /** Shapes held now. */
  int size() {
    return byKey.size();
  }

  /** Resource keys ever seen; key indexes are {@code 0..keyCount()-1}. */
  int keyCount() {
    return keyIndex.size();
  }

  /** The key's index, or null if no shape ever had it. */
  Integer keyIndex(String key) {
    return keyIndex.get(key);
  }

  private int newSlot() {
    if (slotsUsed == bySlot.length) {
      bySlot = Arrays.copyOf(bySlot, slotsUsed * 2);
    }
    return slotsUsed++;
  }

  private void keyOf(String key) {
    keyIndex.computeIfAbsent(key, k -> keyIndex.size());
  }
}
