package io.kiln.engines.llm.impl;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Decides each step's work under two budgets, tokens computed per step and KV blocks (the idea of vLLM's v1
 * scheduler). Running sequences go first, in admission order: each decoding one gets its token, and a prompt still
 * being prefilled gets a chunk of what the decodes leave; then waiting sequences are admitted first come, first
 * served, each starting from the longest chain of its blocks the prefix cache holds, while blocks and tokens remain.
 * A running sequence that needs a block when none is available preempts the most recently admitted one (possibly
 * itself): its blocks are freed and it waits again, to recompute its tokens later. Only sequences whose streams are
 * stepped are scheduled; the others keep their blocks, unless a step would otherwise compute nothing because stepped
 * sequences wait for those blocks: then the most recently admitted unstepped ones are preempted.
 *
 * <p>Under {@link DecoderOptions.Schedule#PREFILL_FIRST} a step in which a stepped prompt waits to be prefilled
 * (newly arrived, part-way through its chunks, or preempted) computes prompts only, under the same budgets and in the
 * same order, and the decoding sequences get nothing: an arrival's first token does not wait behind everybody's
 * next one (vLLM's default, non-chunked scheduler). At most {@code maxPrefillSteps} such steps run in a row; the next
 * is an ordinary one, so a constant arrival stream slows decoding but never starves it. A prefill-only pass that can
 * compute nothing (no blocks) falls back to the ordinary step at once. Not thread-safe.
 */
final class Scheduler {

  /** Tokens {@code [start, start + count)} of {@code seq} to compute this step. */
  record Work(Sequence seq, int start, int count) {
  }

  private final BlockPool pool;
  private final int blockSize;
  private final int maxBatchedTokens;
  private final boolean prefixCache;
  private final DecoderOptions.Schedule schedule;
  private final int maxPrefillSteps;
  /** Prefill-only steps in a row so far (reset by a step that decodes). */
  private int prefillRun;
  private long prefillOnlySteps;
  /** Admitted sequences holding blocks, oldest admission first. */
  private final List<Sequence> running = new ArrayList<>();
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private long admissions;
  private long preemptions;
  private long prefixHitTokens;
  private long prefixLookupTokens;

  Scheduler(BlockPool pool, int blockSize, int maxBatchedTokens, boolean prefixCache,
            DecoderOptions.Schedule schedule, int maxPrefillSteps) {
    this.pool = pool;
    this.blockSize = blockSize;
    this.maxBatchedTokens = maxBatchedTokens;
    this.prefixCache = prefixCache;
    this.schedule = schedule;
    this.maxPrefillSteps = maxPrefillSteps;
  }

  void add(Sequence s) {
    waiting.addLast(s);
  }

  /** This step's work over the sequences in {@code stepped}; sequences not given any wait for a later step. */
  List<Work> schedule(Collection<Sequence> stepped) {
    Set<Sequence> present = Collections.newSetFromMap(new IdentityHashMap<>());
    present.addAll(stepped);
    if (schedule == DecoderOptions.Schedule.PREFILL_FIRST && prefillRun < maxPrefillSteps && prefillWaits(present)) {
      List<Work> work = pass(present, true);
      if (!work.isEmpty()) {
        prefillRun++;
        prefillOnlySteps++;
        return work;
      }
    }
    prefillRun = 0;
    return pass(present, false);
  }

  /** Whether a stepped sequence has prompt (or, preempted, recomputed) tokens to prefill. */
  private boolean prefillWaits(Set<Sequence> present) {
    for (Sequence s : running) {
      if (s.uncomputed() > 1 && present.contains(s)) {
        return true;
      }
    }
    return !waitingAmong(present).isEmpty();
  }

  /** One step's work: with {@code prefillOnly}, only prompts' chunks (an empty list when none can be computed). */
  private List<Work> pass(Set<Sequence> present, boolean prefillOnly) {
    List<Work> work = new ArrayList<>();
    int budget = maxBatchedTokens;
    int decodes = 0;
    for (Sequence s : running) {
      if (!prefillOnly && present.contains(s) && s.uncomputed() == 1) {
        decodes++;
      }
    }
    boolean preempted = false;
    for (int i = 0; i < running.size(); i++) {
      Sequence s = running.get(i);
      if (!present.contains(s)) {
        continue;
      }
      int n;
      if (s.uncomputed() == 1) {
        if (prefillOnly) {
          continue;
        }
        decodes--;
        n = Math.min(1, budget);
      } else {
        n = Math.min(s.uncomputed(), budget - decodes); // decodes keep their token: chunked prefill waits instead
      }
      if (n <= 0) {
        continue;
      }
      while (!grow(s, s.computed + n)) {
        Sequence victim = running.get(running.size() - 1);
        if (!prefillOnly && present.contains(victim) && victim != s && victim.uncomputed() == 1) {
          decodes--;
        }
        preempt(victim);
        preempted = true;
        if (victim == s) {
          break;
        }
      }
      if (s.state == Sequence.State.RUNNING) {
        work.add(new Work(s, s.computed, n));
        budget -= n;
      }
    }
    if (!preempted) { // a step that had to preempt has no room to admit more
      admit(present, work, budget);
    }
    if (prefillOnly) {
      return work; // when empty, the caller runs the ordinary step instead
    }
    // Nothing to compute while stepped sequences wait for blocks that sequences not stepped now hold (their readers
    // are slow): recompute those later rather than stall the ones whose readers keep up (and spin the worker).
    for (int i = running.size() - 1; i >= 0 && work.isEmpty() && !waitingAmong(present).isEmpty(); i--) {
      Sequence idle = running.get(i);
      if (!present.contains(idle)) {
        preempt(idle);
        admit(present, work, budget);
      }
    }
    return work;
  }

  private List<Sequence> waitingAmong(Set<Sequence> present) {
    List<Sequence> out = new ArrayList<>(1);
    for (Sequence s : waiting) {
      if (present.contains(s)) {
        out.add(s);
        break;
      }
    }
    return out;
  }

  private void admit(Set<Sequence> present, List<Work> work, int budget) {
    for (Iterator<Sequence> it = waiting.iterator(); it.hasNext() && budget > 0; ) {
      Sequence s = it.next();
      if (!present.contains(s)) {
        continue;
      }
      int hit = shareCachedPrefix(s);
      int n = Math.min(s.uncomputed(), budget);
      if (!grow(s, s.computed + n)) {
        dropBlocks(s);
        break; // first come, first served: no later sequence overtakes it
      }
      it.remove();
      s.state = Sequence.State.RUNNING;
      s.admittedAt = ++admissions;
      if (!s.admittedOnce) {
        s.admittedOnce = true;
        s.cachedPromptTokens = Math.min(hit, s.promptTokens);
      }
      prefixHitTokens += hit;
      if (prefixCache) {
        prefixLookupTokens += s.length(); // the denominator of the hit rate: every token that could have been found
      }
      running.add(s);
      work.add(new Work(s, s.computed, n));
      budget -= n;
    }
  }

  /** Takes the cached blocks of {@code s}'s longest cached prefix (one token at least is left to compute). */
  private int shareCachedPrefix(Sequence s) {
    if (!prefixCache) {
      return 0;
    }
    int full = (s.length() - 1) / blockSize;
    BlockKey parent = null;
    for (int i = 0; i < full; i++) {
      int from = i * blockSize;
      BlockKey key = new BlockKey(parent, Arrays.copyOfRange(s.tokens(), from, from + blockSize));
      int b = pool.share(key);
      if (b < 0) {
        break;
      }
      s.blocks.add(b);
      parent = pool.keyOf(b);
      s.keys.add(parent);
    }
    s.computed = s.blocks.size() * blockSize;
    return s.computed;
  }

  /** Gives {@code s} the blocks for its first {@code tokens} positions, if available. */
  private boolean grow(Sequence s, int tokens) {
    int need = (tokens + blockSize - 1) / blockSize - s.blocks.size();
    if (need <= 0) {
      return true;
    }
    if (pool.available() < need) {
      return false;
    }
    for (int i = 0; i < need; i++) {
      s.blocks.add(pool.allocate());
    }
    return true;
  }

  private void preempt(Sequence s) {
    running.remove(s);
    dropBlocks(s);
    s.state = Sequence.State.WAITING;
    waiting.addFirst(s);
    preemptions++;
  }

  private void dropBlocks(Sequence s) {
    for (int b : s.blocks) {
      pool.release(b);
    }
    s.blocks.clear();
    s.keys.clear();
    s.computed = 0;
  }

  /** Records that {@code w} was computed; full blocks join the prefix cache. */
  void computed(Work w) {
    Sequence s = w.seq();
    s.computed = w.start() + w.count();
    if (!prefixCache) {
      return;
    }
    for (int i = s.keys.size(); (i + 1) * blockSize <= s.computed; i++) {
      BlockKey key = new BlockKey(i == 0 ? null : s.keys.get(i - 1),
          Arrays.copyOfRange(s.tokens(), i * blockSize, (i + 1) * blockSize));
      int b = s.blocks.get(i);
      pool.fill(b, key);
      s.keys.add(pool.keyOf(b) != null ? pool.keyOf(b) : key);
    }
  }

  /** Ends {@code s} (finished or closed): its blocks are released at once. Idempotent. */
  void remove(Sequence s) {
    if (s.state == Sequence.State.RUNNING) {
      running.remove(s);
    } else if (s.state == Sequence.State.WAITING) {
      waiting.remove(s);
    }
    dropBlocks(s);
    s.state = Sequence.State.FINISHED;
  }

  int running() {
    return running.size();
  }

  int waiting() {
    return waiting.size();
  }

  long preemptions() {
    return preemptions;
  }

  /** Steps that computed prompts' chunks only ({@link DecoderOptions.Schedule#PREFILL_FIRST}). */
  long prefillOnlySteps() {
    return prefillOnlySteps;
  }

  long prefixHitTokens() {
    return prefixHitTokens;
  }

  /** Zeroes the totals (after the warm-up), as the runner zeroes its own. */
  void resetCounters() {
    preemptions = 0;
    prefillOnlySteps = 0;
    prefixHitTokens = 0;
    prefixLookupTokens = 0;
  }

  /** Tokens of the sequences admitted (each admission, a preempted one's again) looked up in the prefix cache. */
  long prefixLookupTokens() {
    return prefixLookupTokens;
  }
}
