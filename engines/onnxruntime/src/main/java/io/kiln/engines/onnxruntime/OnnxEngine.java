package io.kiln.engines.onnxruntime;

import io.kiln.engines.onnxruntime.impl.OnnxModelRunner;
import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.EngineChecks;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.List;

/**
 * ONNX Runtime through its Java API: a folder holding {@value ModelFolders#ONNX_FILE} (or one {@code .onnx} file),
 * one session per worker; a GPU worker gets the CUDA execution provider or fails its load.
 * It reports the model file's size as the memory a model holds (its weights).
 */
public final class OnnxEngine implements Engine {

  private static final Capabilities CAPABILITIES = new Capabilities(true, "", true, false, List.of(),
      ModelFolders.ONNX_FILE);

  @Override
  public String name() {
    return ModelSpec.ENGINE_ONNX;
  }

  @Override
  public Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public boolean recognizes(String fileName) {
    return fileName.endsWith(".onnx");
  }

  @Override
  public List<SpecProblem> check(SpecFields spec) {
    return EngineChecks.selfDescribing("an " + name(), ".onnx file", spec);
  }

  @Override
  public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
    OnnxModelRunner onnx = OnnxModelRunner.load(spec, OnnxModelRunner.modelFile(spec), gpuIndices);
    return new Loaded(onnx, onnx.device(), OnnxModelRunner.version(), OnnxModelRunner.FORMAT, onnx.parameterCount());
  }

  @Override
  public String platform(ModelSpec spec) {
    return "onnxruntime_onnx";
  }
}
