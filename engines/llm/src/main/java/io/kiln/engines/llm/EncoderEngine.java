package io.kiln.engines.llm;

import io.kiln.engines.llm.impl.DecoderLoader;
import io.kiln.engines.llm.impl.EncoderOptions;
import io.kiln.engines.llm.impl.EncoderRunner;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TextModels;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

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
public final class EncoderEngine implements Engine {

  public static final String NAME = "Encoder";
  private static final Capabilities CAPABILITIES = new Capabilities(true, "", false, false, List.of(), "");

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Capabilities capabilities() {
    return CAPABILITIES;
  }

  /** Never: an encoder's {@code model.onnx} stays with the OnnxRuntime engine unless a spec names this one. */
  @Override
  public boolean recognizes(String fileName) {
    return false;
  }

  @Override
  public List<SpecProblem> check(SpecFields spec) {
    List<SpecProblem> problems = new ArrayList<>(
        io.kiln.engines.llm.impl.TextSpecs.check(NAME, TextModels.embedding(), spec));
    problems.addAll(EncoderOptions.problems(spec.options()));
    return problems;
  }

  @Override
  public List<String> optionNames() {
    return EncoderOptions.NAMES;
  }

  @Override
  public Optional<ModelSignature> defaultSignature(SpecFields spec) {
    return Optional.of(TextModels.embedding());
  }

  @Override
  public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
    EncoderRunner runner = EncoderRunner.load(spec, gpuIndices);
    return new Loaded(runner, "cpu()", DecoderLoader.onnxRuntimeVersion(), "onnx", OptionalLong.empty());
  }
}
