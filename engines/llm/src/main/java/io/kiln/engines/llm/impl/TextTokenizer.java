package io.kiln.engines.llm.impl;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.kiln.pools.ModelLoadException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * A Hugging Face {@code tokenizer.json} run by the tokenizers library (Rust, through DJL's JNI binding). Not
 * thread-safe by contract (one worker thread uses it), though the library itself is.
 */
final class TextTokenizer implements AutoCloseable {

  private final HuggingFaceTokenizer tokenizer;
  private final int truncateAt;

  private TextTokenizer(HuggingFaceTokenizer tokenizer, int truncateAt) {
    this.tokenizer = tokenizer;
    this.truncateAt = truncateAt;
  }

  /**
   * A tokenizer that never truncates nor pads (a decoder checks prompt lengths itself).
   *
   * @throws ModelLoadException when the file does not load
   */
  static TextTokenizer forDecoder(Path file) {
    return build(file, 0);
  }

  /** A tokenizer that truncates each text to {@code maxLength} tokens, special tokens included. */
  static TextTokenizer forEncoder(Path file, int maxLength) {
    return build(file, maxLength);
  }

  private static TextTokenizer build(Path file, int maxLength) {
    try {
      HuggingFaceTokenizer.Builder b = HuggingFaceTokenizer.builder().optTokenizerPath(file)
          .optPadding(false).optAddSpecialTokens(maxLength > 0);
      if (maxLength > 0) {
        b.optTruncation(true).optMaxLength(maxLength);
      } else {
        b.optTruncation(false);
      }
      return new TextTokenizer(b.build(), maxLength);
    } catch (IOException | RuntimeException | UnsatisfiedLinkError e) {
      throw new ModelLoadException("tokenizer " + file + " did not load: " + e.getMessage(), e);
    }
  }

  /** The ids of {@code text}, with the special tokens the tokenizer's post-processor adds when {@code special}. */
  int[] encode(String text, boolean special) {
    Encoding e = tokenizer.encode(text, special, false);
    return toInts(e.getIds());
  }

  /** The text of {@code ids[from, to)}, special tokens skipped. */
  String decode(int[] ids, int from, int to) {
    long[] l = new long[to - from];
    for (int i = from; i < to; i++) {
      l[i - from] = ids[i];
    }
    return tokenizer.decode(l, true);
  }

  /** The id of a token written as its own text ({@code <|endoftext|>}), if it encodes to exactly one. */
  OptionalInt idOf(String token) {
    int[] ids = encode(token, false);
    return ids.length == 1 ? OptionalInt.of(ids[0]) : OptionalInt.empty();
  }

  int truncateAt() {
    return truncateAt;
  }

  /** Ids and masks of a batch, each truncated (encoder); see {@link #forEncoder}. */
  Encoding[] encodeBatch(java.util.List<String> texts) {
    return tokenizer.batchEncode(texts, true, false);
  }

  static int[] toInts(long[] ids) {
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) {
      out[i] = Math.toIntExact(ids[i]);
    }
    return out;
  }

  @Override
  public void close() {
    tokenizer.close();
  }
}
