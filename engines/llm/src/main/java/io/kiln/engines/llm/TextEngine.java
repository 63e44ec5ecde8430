package io.kiln.engines.llm;

import io.kiln.engines.llm.impl.DecoderLoader;
import io.kiln.engines.llm.impl.TextSpecs;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * What the LLM module's engines share: a name, a {@link io.kiln.pools.TextModels} signature a spec may leave out, its
 * own options, ONNX Runtime on the CPU, and a folder never detected (a spec names the engine; a plain
 * {@code model.onnx} stays with the OnnxRuntime engine). Stateless and thread-safe.
 */
abstract class TextEngine implements Engine {

  private final String name;
  private final Capabilities capabilities;
  private final ModelSignature signature;
  private final List<String> optionNames;
  private final Function<Map<String, String>, List<SpecProblem>> optionProblems;
  private final BiFunction<ModelSpec, List<Integer>, ModelRunner> loader;

  TextEngine(String name, Capabilities capabilities, ModelSignature signature, List<String> optionNames,
             Function<Map<String, String>, List<SpecProblem>> optionProblems,
             BiFunction<ModelSpec, List<Integer>, ModelRunner> loader) {
    this.name = name;
    this.capabilities = capabilities;
    this.signature = signature;
    this.optionNames = optionNames;
    this.optionProblems = optionProblems;
    this.loader = loader;
  }

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final Capabilities capabilities() {
    return capabilities;
  }

  /** Never: the engine's {@code model.onnx} stays with the OnnxRuntime engine unless a spec names this one. */
  @Override
  public final boolean recognizes(String fileName) {
    return false;
  }

  @Override
  public final List<SpecProblem> check(SpecFields spec) {
    List<SpecProblem> problems = new ArrayList<>(TextSpecs.check(name, signature, spec));
    problems.addAll(optionProblems.apply(spec.options()));
    return problems;
  }

  @Override
  public final List<String> optionNames() {
    return optionNames;
  }

  @Override
  public final Optional<ModelSignature> defaultSignature(SpecFields spec) {
    return Optional.of(signature);
  }

  @Override
  public final Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
    return new Loaded(loader.apply(spec, gpuIndices), "cpu()", DecoderLoader.onnxRuntimeVersion(), "onnx",
        OptionalLong.empty());
  }
}
