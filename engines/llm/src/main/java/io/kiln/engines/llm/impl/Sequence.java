package io.kiln.engines.llm.impl;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One request's generation as the scheduler sees it: its tokens (prompt, then generated), how many of them have
 * their keys and values in the KV cache, the blocks holding those, and its sampler and text state. Preemption
 * drops the blocks and the computed count and keeps the rest, so the sequence resumes by recomputing its tokens
 * (prompt and generated alike) as one longer prompt. Not thread-safe.
 */
final class Sequence {

  enum State { WAITING, RUNNING, FINISHED }

  final long id;
  final int promptTokens;
  final int maxTokens;
  final GenerationParams params;
  final Sampler sampler;
  final TextStream text;
  private int[] tokens;
  private int length;
  /** Tokens whose keys and values are in the cache (positions 0 to computed - 1). */
  int computed;
  final List<Integer> blocks = new ArrayList<>();
  /** The prefix-cache keys of the full blocks computed so far, in order. */
  final List<BlockKey> keys = new ArrayList<>();
  State state = State.WAITING;
  /** When it was last admitted (a step counter): preemption takes the latest. */
  long admittedAt;
  /** Prompt tokens found in the prefix cache at its first admission. */
  int cachedPromptTokens;
  boolean admittedOnce;
  String finishReason = "";

  Sequence(long id, int[] prompt, int maxTokens, GenerationParams params, Sampler sampler, TextStream text) {
    this.id = id;
    this.promptTokens = prompt.length;
    this.maxTokens = maxTokens;
    this.params = params;
    this.sampler = sampler;
    this.text = text;
    this.tokens = Arrays.copyOf(prompt, prompt.length + Math.min(maxTokens, 256));
    this.length = prompt.length;
  }

  int length() {
    return length;
  }

  int token(int i) {
    return tokens[i];
  }

  /** The tokens array itself (valid up to {@link #length()}); do not modify. */
  int[] tokens() {
    return tokens;
  }

  int generated() {
    return length - promptTokens;
  }

  /** Tokens still to compute before the next one can be sampled. */
  int uncomputed() {
    return length - computed;
  }

  void append(int token) {
    if (length == tokens.length) {
      tokens = Arrays.copyOf(tokens, length * 2);
    }
    tokens[length++] = token;
  }

  boolean finished() {
    return state == State.FINISHED;
  }
}
