package io.kiln.pools;

import java.util.List;

/**
 * The tensors and request parameters of text models, shared by every engine that serves one and by the front ends
 * that speak text (the gateway's OpenAI API, Triton's generate extension): one contract, so that any model that
 * keeps it (the LLM engine's decoder and encoder, a Python model) is served by all of them.
 *
 * <p><b>Generation</b> ({@link #generation()}, a streaming model): a request carries one prompt in
 * {@value #TEXT_INPUT} (BYTES, one element; with {@value #INPUT_FORMAT} {@value #FORMAT_CHAT} it is a JSON array of
 * {@code {"role", "content"}} messages the model renders with its chat template) and its sampling settings as request
 * parameters ({@value #MAX_TOKENS}, {@value #TEMPERATURE}, {@value #TOP_P}, {@value #TOP_K}, {@value #SEED},
 * {@value #STOP}, {@value #IGNORE_EOS}). Each chunk holds {@value #TEXT_OUTPUT} (the text added since the previous
 * chunk, possibly empty while a stop string or a character is incomplete), {@value #FINISH_REASON} (empty until the
 * last chunk, then {@value #FINISH_STOP} or {@value #FINISH_LENGTH}) and the usage so far, {@value #PROMPT_TOKENS}
 * and {@value #COMPLETION_TOKENS}; each tensor has shape {@code [1]}. The stream ends after the chunk that carries
 * the finish reason.
 *
 * <p><b>Embedding</b> ({@link #embedding()}, a batching model): each row of {@value #TEXT_INPUT} is one text; the
 * answer's {@value #EMBEDDING} row is its vector (FP32, L2-normalised) and {@value #PROMPT_TOKENS} its token count.
 */
public final class TextModels {

  public static final String TEXT_INPUT = "text_input";
  public static final String TEXT_OUTPUT = "text_output";
  public static final String FINISH_REASON = "finish_reason";
  public static final String PROMPT_TOKENS = "prompt_tokens";
  public static final String COMPLETION_TOKENS = "completion_tokens";
  public static final String EMBEDDING = "embedding";

  /** Request parameter: the most tokens to generate (an integer ≥ 1). */
  public static final String MAX_TOKENS = "max_tokens";
  /** Request parameter: sampling temperature, a number ≥ 0 (0: greedy). */
  public static final String TEMPERATURE = "temperature";
  /** Request parameter: nucleus sampling's probability mass, in (0, 1]. */
  public static final String TOP_P = "top_p";
  /** Request parameter: sample among the k most likely tokens (0: all). */
  public static final String TOP_K = "top_k";
  /** Request parameter: the sampler's seed (an integer); the same seed and prompt give the same text. */
  public static final String SEED = "seed";
  /** Request parameter: stop strings, one string or a JSON array of up to 4 strings; the text ends before the first. */
  public static final String STOP = "stop";
  /** Request parameter: keep generating past the end-of-sequence token, up to {@value #MAX_TOKENS} (benchmarks). */
  public static final String IGNORE_EOS = "ignore_eos";
  /** Request parameter: {@value #FORMAT_TEXT} (default) or {@value #FORMAT_CHAT}. */
  public static final String INPUT_FORMAT = "input_format";
  public static final String FORMAT_TEXT = "text";
  public static final String FORMAT_CHAT = "chat";

  public static final String FINISH_STOP = "stop";
  public static final String FINISH_LENGTH = "length";

  private TextModels() {
  }

  /** The signature of a generative model: one prompt in, text chunks with finish reason and usage out. */
  public static ModelSignature generation() {
    return new ModelSignature(List.of(new TensorSpec(TEXT_INPUT, DataType.BYTES, new long[] {-1})),
        List.of(new TensorSpec(TEXT_OUTPUT, DataType.BYTES, new long[] {-1}),
            new TensorSpec(FINISH_REASON, DataType.BYTES, new long[] {-1}),
            new TensorSpec(PROMPT_TOKENS, DataType.INT32, new long[] {-1}),
            new TensorSpec(COMPLETION_TOKENS, DataType.INT32, new long[] {-1})), true);
  }

  /** The signature of a text encoder: texts in, one normalised vector and token count per text out. */
  public static ModelSignature embedding() {
    return new ModelSignature(List.of(new TensorSpec(TEXT_INPUT, DataType.BYTES, new long[] {-1})),
        List.of(new TensorSpec(EMBEDDING, DataType.FP32, new long[] {-1, -1}),
            new TensorSpec(PROMPT_TOKENS, DataType.INT32, new long[] {-1})), false);
  }

  /** Whether {@code s} keeps the generation contract (its inputs and outputs at least), whatever its engine. */
  public static boolean generates(ModelSignature s) {
    return s.streaming() && keeps(s, generation());
  }

  /** Whether {@code s} keeps the embedding contract, whatever its engine. */
  public static boolean embeds(ModelSignature s) {
    return !s.streaming() && keeps(s, embedding());
  }

  private static boolean keeps(ModelSignature s, ModelSignature contract) {
    return s.inputs().size() == 1 && has(s.inputs(), contract.inputs()) && has(s.outputs(), contract.outputs());
  }

  private static boolean has(List<TensorSpec> have, List<TensorSpec> want) {
    for (TensorSpec w : want) {
      if (have.stream().noneMatch(h -> h.name().equals(w.name()) && h.datatype() == w.datatype()
          && h.shape().length == w.shape().length)) {
        return false;
      }
    }
    return true;
  }
}
