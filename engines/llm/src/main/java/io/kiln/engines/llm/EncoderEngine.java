package io.kiln.engines.llm;

import io.kiln.engines.llm.impl.EncoderOptions;
import io.kiln.engines.llm.impl.EncoderRunner;
import io.kiln.pools.TextModels;
import java.util.List;

/**
 * Sentence encoders ({@code engine: Encoder}): a transformer encoder in ONNX with its {@code tokenizer.json}
 * (all-MiniLM-L6-v2 style), answering each text with one L2-normalised vector, as {@link TextModels#embedding()} says
 * (a spec may leave its tensors out). Batches are padded to their longest text and run in one ONNX Runtime call on
 * the CPU.
 *
 * <p>Options ({@code options:}): {@value EncoderOptions#MAX_LENGTH} (tokens per text, longer ones truncated; default
 * sentence-transformers' {@code max_seq_length}, the tokenizer's limit, or 256), {@value EncoderOptions#NORMALIZE}
 * (default true), {@value EncoderOptions#POOLING} ({@value EncoderOptions#POOLING_MEAN}, the default, or
 * {@value EncoderOptions#POOLING_CLS}).
 *
 * <p>Stateless and thread-safe; the constructor does no work. {@link #check} is pure. {@link #load} blocks and throws a
 * {@link io.kiln.pools.ModelLoadException} naming the cause. It reports memory (the model file). The folder is never
 * detected: specs name the engine.
 */
public final class EncoderEngine extends TextEngine {

  public static final String NAME = "Encoder";

  public EncoderEngine() {
    super(NAME, new Capabilities(true, "", false, false, List.of(), ""), TextModels.embedding(), EncoderOptions.NAMES,
        EncoderOptions::problems, EncoderRunner::load);
  }
}
