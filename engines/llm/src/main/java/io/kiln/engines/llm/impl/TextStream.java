package io.kiln.engines.llm.impl;

import java.util.List;

/**
 * Turns a sequence's generated tokens into text increments that are final: a trailing incomplete UTF-8 character
 * (the tokenizer decodes it as U+FFFD) waits for the token that completes it, and text that could be the start of a
 * stop string waits until it is known not to be one. Tokens are decoded in a sliding window (as vLLM does) rather
 * than from the start, so a long completion costs the same per token. Not thread-safe.
 */
final class TextStream {

  private static final char REPLACEMENT = '\uFFFD';

  private final TextTokenizer tokenizer;
  private final List<String> stops;
  private final int longestStop;
  private int[] ids;
  private int count;
  private int prefixOffset;
  private int readOffset;
  /** The decoded window {@code [prefixOffset, readOffset)}, kept while the offsets stand (null: not decoded). */
  private String prefixText;
  /** Text decoded so far; {@code emitted} of its chars have been sent. */
  private final StringBuilder text = new StringBuilder();
  private int emitted;

  /**
   * @param promptTail the prompt's last few tokens: decoding starts with them so that the first generated token keeps
   *     the leading space a SentencePiece decoder would strip from the start of a text
   */
  TextStream(TextTokenizer tokenizer, List<String> stops, int[] promptTail) {
    this.tokenizer = tokenizer;
    this.ids = java.util.Arrays.copyOf(promptTail, Math.max(16, promptTail.length * 2));
    this.count = promptTail.length;
    this.readOffset = promptTail.length;
    this.stops = stops;
    this.longestStop = stops.stream().mapToInt(String::length).max().orElse(0);
  }

  /** What adding one token gives. {@code stopped}: a stop string ended the text, {@code delta} is all before it. */
  record Step(String delta, boolean stopped) {
  }

  /** Adds the generated token {@code id} and says what can be sent now. */
  Step add(int id) {
    if (count == ids.length) {
      ids = java.util.Arrays.copyOf(ids, count * 2);
    }
    ids[count++] = id;
    String prefix = prefix();
    String whole = tokenizer.decode(ids, prefixOffset, count);
    if (whole.length() > prefix.length() && whole.charAt(whole.length() - 1) != REPLACEMENT) {
      text.append(whole, prefix.length(), whole.length());
      prefixOffset = readOffset;
      readOffset = count;
      prefixText = null;
    }
    return release(false);
  }

  private String prefix() {
    if (prefixText == null) {
      prefixText = tokenizer.decode(ids, prefixOffset, readOffset);
    }
    return prefixText;
  }

  /** Everything still held back, at the end of generation (an incomplete character stays U+FFFD). */
  Step finish() {
    if (readOffset < count) {
      String prefix = prefix();
      String whole = tokenizer.decode(ids, prefixOffset, count);
      if (whole.length() > prefix.length()) {
        text.append(whole, prefix.length(), whole.length());
      }
      readOffset = count;
      prefixText = null;
    }
    return release(true);
  }

  private Step release(boolean all) {
    if (!stops.isEmpty()) {
      int from = Math.max(0, emitted);
      int at = -1;
      for (String s : stops) {
        int i = text.indexOf(s, from);
        if (i >= 0 && (at < 0 || i < at)) {
          at = i;
        }
      }
      if (at >= 0) {
        String delta = text.substring(emitted, at);
        emitted = at;
        return new Step(delta, true);
      }
    }
    int end = all ? text.length() : text.length() - heldForStops();
    String delta = text.substring(emitted, end);
    emitted = end;
    return new Step(delta, false);
  }

  private boolean startsAt(int start, String s, int len) {
    for (int i = 0; i < len; i++) {
      if (text.charAt(start + i) != s.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** The longest suffix of the unsent text that is a proper prefix of a stop string. */
  private int heldForStops() {
    int unsent = text.length() - emitted;
    for (int len = Math.min(unsent, longestStop - 1); len > 0; len--) {
      int start = text.length() - len;
      for (String s : stops) {
        if (s.length() > len && startsAt(start, s, len)) {
          return len;
        }
      }
    }
    return 0;
  }
}
