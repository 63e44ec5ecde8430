package io.kiln.pools;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * Prefix-aware placement for text models: requests whose prompts share a prefix go where that prefix was last sent
 * (a node, or a worker holding its KV cache), unless that target is clearly busier than the least loaded one.
 * A prompt's prefix is a chain of keys, one per {@value #BLOCK_BYTES}-byte block of its text (key i hashes blocks
 * 0..i), as Ray Serve's prefix-cache-affinity router matches prompt text and llm-d matches KV blocks; a request that
 * names a session ({@value #SESSION_PARAMETER}) has that session as its only key, so a conversation stays on one
 * target. The index remembers at most {@code capacity} keys, least recently used out first.
 *
 * <p>Thread-safe (synchronised: the work per request is a few map operations); keys are computed without a lock.
 */
public final class PrefixAffinity {

  /** Bytes of prompt text per key: a system prompt of a few hundred bytes spans several. */
  public static final int BLOCK_BYTES = 64;
  /** Keys per prompt at most: the first 4 KiB of text decide. */
  public static final int MAX_BLOCKS = 64;
  /** The request parameter naming a session; the gateway sets it from the {@value #SESSION_HEADER} header. */
  public static final String SESSION_PARAMETER = "kiln_session";
  /** The HTTP header naming a session for session affinity. */
  public static final String SESSION_HEADER = "x-session-id";
  private static final long[] NONE = new long[0];

  /** A target whose load is at most the least loaded one's plus this (and a quarter of it) keeps its prefixes. */
  private final int loadSlack;
  private final Map<Long, String> holders;

  /**
   * @param capacity how many keys the index holds
   * @param loadSlack how much busier than the least loaded candidate a holder may be and still get the request
   */
  public PrefixAffinity(int capacity, int loadSlack) {
    if (capacity < 1 || loadSlack < 0) {
      throw new IllegalArgumentException("capacity must be ≥ 1 and loadSlack ≥ 0");
    }
    this.loadSlack = loadSlack;
    this.holders = new LinkedHashMap<>(Math.min(capacity, 1 << 16), 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, String> eldest) {
        return size() > capacity;
      }
    };
  }

  /**
   * The prefix keys of {@code request}: its session's when it names one, else its {@value TextModels#TEXT_INPUT}
   * text's (the first element of a BYTES input of that name); empty for any other request.
   */
  public static long[] keys(InferenceRequest request) {
    Object session = request.parameters().get(SESSION_PARAMETER);
    if (session != null && !session.toString().isEmpty()) {
      byte[] id = session.toString().getBytes(StandardCharsets.UTF_8);
      return new long[] {mix(0x5E55_104EL, hash(id, 0, id.length))};
    }
    for (Tensor t : request.inputs()) {
      if (t.name().equals(TextModels.TEXT_INPUT) && t.datatype() == DataType.BYTES && t.elementCount() > 0) {
        return keys(t.byteElements().get(0));
      }
    }
    return NONE;
  }

  /** The chained keys of {@code text}'s blocks (a trailing partial block counts: a short prompt still matches). */
  public static long[] keys(byte[] text) {
    int blocks = Math.min(MAX_BLOCKS, (text.length + BLOCK_BYTES - 1) / BLOCK_BYTES);
    long[] keys = new long[blocks];
    long chain = 0x9E37_79B9_7F4A_7C15L;
    for (int b = 0; b < blocks; b++) {
      int from = b * BLOCK_BYTES;
      chain = mix(chain, hash(text, from, Math.min(text.length, from + BLOCK_BYTES)));
      keys[b] = chain;
    }
    return keys;
  }

  /**
   * The target for a request of {@code keys} among {@code candidates}: the holder of its longest known prefix when
   * that holder is a candidate whose load is within the slack of the least loaded candidate's, else null (the caller
   * balances as usual).
   *
   * @param load a candidate's load (queued + running), or a negative value for one that cannot take the request
   */
  public <T> T choose(long[] keys, Iterable<T> candidates, java.util.function.Function<T, String> id,
                      ToIntFunction<T> load) {
    if (keys.length == 0) {
      return null;
    }
    int least = Integer.MAX_VALUE;
    for (T c : candidates) {
      int l = load.applyAsInt(c);
      if (l >= 0) {
        least = Math.min(least, l);
      }
    }
    if (least == Integer.MAX_VALUE) {
      return null;
    }
    synchronized (holders) {
      for (int i = keys.length - 1; i >= 0; i--) {
        String holder = holders.get(keys[i]);
        if (holder == null) {
          continue;
        }
        for (T c : candidates) {
          if (id.apply(c).equals(holder)) {
            int l = load.applyAsInt(c);
            return l >= 0 && l <= least + loadSlack + least / 4 ? c : null;
          }
        }
        return null; // the holder is gone or cannot take it: a shorter prefix's holder would not help more
      }
    }
    return null;
  }

  /** Notes that a request of {@code keys} went to {@code target}: its prefixes are held there from now on. */
  public void record(long[] keys, String target) {
    if (keys.length == 0) {
      return;
    }
    synchronized (holders) {
      for (long k : keys) {
        holders.put(k, target);
      }
    }
  }

  /** How many keys the index holds. */
  public int size() {
    synchronized (holders) {
      return holders.size();
    }
  }

  private static long hash(byte[] b, int from, int to) {
    long h = 0xCBF2_9CE4_8422_2325L; // FNV-1a, then mixed: cheap and spread enough for an index key
    for (int i = from; i < to; i++) {
      h = (h ^ (b[i] & 0xff)) * 0x100_0000_01B3L;
    }
    return h;
  }

  private static long mix(long a, long b) {
    long x = a * 0x9E37_79B9_7F4A_7C15L + b;
    x ^= x >>> 32;
    x *= 0xD6E8_FEB8_6659_FD93L;
    x ^= x >>> 32;
    return x;
  }
}
