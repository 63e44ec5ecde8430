package io.kiln.engines.llm;

import io.kiln.engines.llm.impl.DecoderLoader;
import io.kiln.engines.llm.impl.DecoderOptions;
import io.kiln.pools.TextModels;
import java.util.List;

/**
 * Generative decoders ({@code engine: Decoder}): a causal LM exported by {@code optimum-cli export onnx --task
 * text-generation-with-past} (a folder holding {@code model.onnx} and {@code tokenizer.json}, optionally
 * {@code tokenizer_config.json}, {@code generation_config.json}, {@code config.json}), served on the CPU by ONNX
 * Runtime with a paged KV cache, continuous batching, chunked prefill, a prefix cache and preemption. Its models keep
 * {@link TextModels#generation()}: a spec may leave its tensors out.
 *
 * <p>Options ({@code options:}): {@value DecoderOptions#MAX_BATCHED_TOKENS} (tokens per step, default
 * {@value DecoderOptions#DEFAULT_MAX_BATCHED_TOKENS}), {@value DecoderOptions#KV_CACHE_TOKENS} (KV cache per worker,
 * default {@value DecoderOptions#DEFAULT_KV_CACHE_TOKENS}), {@value DecoderOptions#BLOCK_SIZE} (default
 * {@value DecoderOptions#DEFAULT_BLOCK_SIZE}), {@value DecoderOptions#MAX_MODEL_LEN} (default: the model's),
 * {@value DecoderOptions#PREFIX_CACHE} (default true). The pool's {@code max_batch_size} bounds the sequences a
 * worker runs at once.
 *
 * <p>Stateless and thread-safe; the constructor does no work. {@link #check} is pure. {@link #load} blocks; it throws
 * a {@link io.kiln.pools.ModelLoadException} naming the cause (a folder that is not such an export, a float16 KV
 * cache, a GPU assigned without {@code allow_cpu_fallback}). It reports memory (the model file plus the KV cache).
 * The folder is never detected: specs name the engine.
 */
public final class DecoderEngine extends TextEngine {

  public static final String NAME = "Decoder";

  public DecoderEngine() {
    super(NAME, new Capabilities(true, "token by token, continuously batched", false, true, List.of(), ""),
        TextModels.generation(), DecoderOptions.NAMES, DecoderOptions::problems, DecoderLoader::load);
  }
}
