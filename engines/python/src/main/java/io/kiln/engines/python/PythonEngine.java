package io.kiln.engines.python;

import io.kiln.engines.python.impl.PythonModelRunner;
import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.EngineChecks;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.List;
import java.util.OptionalLong;

/**
 * A Python class in a folder's {@value ModelFolders#PYTHON_FILE}, run by one Python process per worker (see
 * {@link io.kiln.pools.PythonOptions}); it streams through {@code predict_stream} and warms itself.
 * It reports the resident memory of the worker's Python process as the memory a model holds.
 *
 * <p>Each runner starts and supervises one Python process of its
 * own (see {@link io.kiln.pools.PythonOptions}); closing the runner stops it. The process sees the worker's GPUs as
 * {@code CUDA_VISIBLE_DEVICES} and its model is told device {@code cuda:0} (or {@code cpu} without GPUs);
 * Kiln does not check that the GPUs exist.
 */
public final class PythonEngine implements Engine {

  private static final Capabilities CAPABILITIES = new Capabilities(true, "a class with predict_stream", true, true,
      List.of(), ModelFolders.PYTHON_FILE);

  @Override
  public String name() {
    return ModelSpec.ENGINE_PYTHON;
  }

  @Override
  public Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public boolean recognizes(String fileName) {
    return fileName.equals(ModelFolders.PYTHON_FILE);
  }

  @Override
  public List<SpecProblem> check(SpecFields spec) {
    return EngineChecks.selfDescribing("a " + name(), ModelFolders.PYTHON_FILE, spec);
  }

  @Override
  public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
    PythonModelRunner python = PythonModelRunner.load(spec, gpuIndices);
    return new Loaded(python, python.device(), python.engineVersion(), PythonModelRunner.FORMAT, OptionalLong.empty());
  }

  @Override
  public String platform(ModelSpec spec) {
    return "python";
  }
}
