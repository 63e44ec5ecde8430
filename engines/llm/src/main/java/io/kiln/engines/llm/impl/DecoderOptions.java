package io.kiln.engines.llm.impl;

import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A decoder's engine options ({@code options:} of its spec), immutable; {@link #problems} is pure and never throws
 * (an engine's {@code check}).
 *
 * @param maxBatchedTokens tokens computed per step: one per decoding sequence, prefill chunks fill the rest
 * @param kvCacheTokens the KV cache of one worker, in tokens (rounded down to whole blocks)
 * @param blockSize tokens per KV block, the unit of allocation and of prefix sharing
 * @param maxModelLen the longest sequence (prompt and completion), 0: the model's own limit
 * @param prefixCache whether full blocks are kept and shared between sequences with the same prefix
 * @param schedule what a step computes when prompts wait to be prefilled while others decode
 * @param maxPrefillSteps under {@link Schedule#PREFILL_FIRST}, the most prefill-only steps in a row before a step
 *     that decodes (so decoding sequences are never starved by a constant stream of arrivals)
 */
public record DecoderOptions(int maxBatchedTokens, int kvCacheTokens, int blockSize, int maxModelLen,
                             boolean prefixCache, Schedule schedule, int maxPrefillSteps) {

  /** A step policy (the option's values are the YAML names). */
  public enum Schedule {
    /** Prompts' prefill in steps of their own, before anyone's next token, while they wait (vLLM's default). */
    PREFILL_FIRST("prefill-first"),
    /** Every step decodes every running sequence and fills the rest of the token budget with prefill chunks. */
    MIXED("mixed");

    private final String yaml;

    Schedule(String yaml) {
      this.yaml = yaml;
    }

    public String yaml() {
      return yaml;
    }

    static Schedule of(String yaml) {
      for (Schedule s : values()) {
        if (s.yaml.equals(yaml)) {
          return s;
        }
      }
      throw new IllegalArgumentException(yaml);
    }
  }

  public static final String MAX_BATCHED_TOKENS = "max_batched_tokens";
  public static final String KV_CACHE_TOKENS = "kv_cache_tokens";
  public static final String BLOCK_SIZE = "block_size";
  public static final String MAX_MODEL_LEN = "max_model_len";
  public static final String PREFIX_CACHE = "prefix_cache";
  public static final String SCHEDULE = "schedule";
  public static final String MAX_PREFILL_STEPS = "max_prefill_steps";
  public static final int DEFAULT_MAX_BATCHED_TOKENS = 256;
  public static final int DEFAULT_KV_CACHE_TOKENS = 8192;
  public static final int DEFAULT_BLOCK_SIZE = 16;
  public static final Schedule DEFAULT_SCHEDULE = Schedule.PREFILL_FIRST;
  public static final int DEFAULT_MAX_PREFILL_STEPS = 4;
  public static final DecoderOptions DEFAULTS = new DecoderOptions(DEFAULT_MAX_BATCHED_TOKENS,
      DEFAULT_KV_CACHE_TOKENS, DEFAULT_BLOCK_SIZE, 0, true, DEFAULT_SCHEDULE, DEFAULT_MAX_PREFILL_STEPS);
  /** The option names, as {@link io.kiln.pools.spi.Engine#optionNames()} lists them. */
  public static final List<String> NAMES = List.of(MAX_BATCHED_TOKENS, KV_CACHE_TOKENS, BLOCK_SIZE, MAX_MODEL_LEN,
      PREFIX_CACHE, SCHEDULE, MAX_PREFILL_STEPS);
  private static final Set<String> KNOWN = Set.copyOf(NAMES);
  private static final int MAX = 1 << 24;

  /** What is wrong with {@code options}, the first first (empty: nothing). Pure. */
  public static List<SpecProblem> problems(Map<String, String> options) {
    List<SpecProblem> problems = new ArrayList<>();
    read(options, problems);
    return problems;
  }

  /**
   * The options {@code options} set, the rest defaulted.
   *
   * @throws IllegalArgumentException naming the first wrong option (a checked spec has none)
   */
  public static DecoderOptions of(Map<String, String> options) {
    List<SpecProblem> problems = new ArrayList<>();
    DecoderOptions o = read(options, problems);
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(problems.get(0).toString());
    }
    return o;
  }

  private static DecoderOptions read(Map<String, String> options, List<SpecProblem> problems) {
    Options o = new Options(options, KNOWN, problems);
    int batched = o.integer(MAX_BATCHED_TOKENS, DEFAULT_MAX_BATCHED_TOKENS, 1, 65_536);
    int kv = o.integer(KV_CACHE_TOKENS, DEFAULT_KV_CACHE_TOKENS, 1, MAX);
    int block = o.integer(BLOCK_SIZE, DEFAULT_BLOCK_SIZE, 1, 1024);
    int len = o.integer(MAX_MODEL_LEN, 0, 2, MAX);
    boolean prefix = o.bool(PREFIX_CACHE, true);
    Schedule schedule = Schedule.of(o.choice(SCHEDULE, DEFAULT_SCHEDULE.yaml(),
        List.of(Schedule.PREFILL_FIRST.yaml(), Schedule.MIXED.yaml())));
    int prefillSteps = o.integer(MAX_PREFILL_STEPS, DEFAULT_MAX_PREFILL_STEPS, 1, 1024);
    if (kv < 2 * block) {
      o.problem(options.containsKey(KV_CACHE_TOKENS) ? KV_CACHE_TOKENS : BLOCK_SIZE, KV_CACHE_TOKENS + " ("
          + kv + ") must hold at least two blocks of " + BLOCK_SIZE + " (" + block + ") tokens");
    }
    return new DecoderOptions(batched, kv, block, len, prefix, schedule, prefillSteps);
  }
}
