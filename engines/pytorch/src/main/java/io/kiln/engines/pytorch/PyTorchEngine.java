package io.kiln.engines.pytorch;

import ai.djl.engine.Engine;
import io.kiln.engines.pytorch.impl.Architectures;
import io.kiln.engines.pytorch.impl.DjlModelRunner;
import io.kiln.engines.pytorch.impl.EngineSetup;
import io.kiln.engines.pytorch.impl.ModelFiles;
import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.EngineChecks;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DJL's PyTorch engine in the worker's JVM: a folder holding a TorchScript {@code .pt}, or DJL
 * {@code NAME-NNNN.params} weights with an {@code architecture} (see {@link ModelSpec}'s formats). Its thread
 * pools are process-wide ({@link EngineSetup}); it cannot tell the memory a model holds in libtorch.
 *
 * <p>The first load in a process starts DJL's PyTorch engine
 * (unpacking the native library into {@code DJL_CACHE_DIR}, default {@code ~/.djl.ai}, the first time on a
 * machine: seconds), in offline mode: nothing is downloaded. PyTorch's thread pools are process-wide: the
 * first spec with non-zero {@code intraOpThreads}/{@code interOpThreads} sets them (unless
 * {@code -Dai.djl.pytorch.num_threads}/{@code num_interop_threads} already did), later different values
 * are logged and ignored.
 */
public final class PyTorchEngine implements io.kiln.pools.spi.Engine {

  private static final Logger log = LoggerFactory.getLogger(PyTorchEngine.class);
  private static final Capabilities CAPABILITIES = new Capabilities(false, "", true, false,
      List.of(ModelSpec.FORMAT_TORCHSCRIPT, ModelSpec.FORMAT_DJL_PARAMS),
      "a .pt / NAME-NNNN.params file");

  @Override
  public String name() {
    return ModelSpec.ENGINE_PYTORCH;
  }

  @Override
  public Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public boolean recognizes(String fileName) {
    return fileName.endsWith(".pt") || ModelFolders.DJL_PARAMS.matcher(fileName).matches();
  }

  @Override
  public List<SpecProblem> check(SpecFields spec) {
    List<SpecProblem> problems = new ArrayList<>();
    String format = spec.format();
    String architecture = spec.architecture();
    if (spec.outputs().isEmpty()) {
      problems.add(new SpecProblem("outputs", "a " + name() + " model needs at least one output"));
    }
    if (format.equals(ModelSpec.FORMAT_TORCHSCRIPT) && !architecture.isEmpty()) {
      problems.add(new SpecProblem("architecture", "a TorchScript file carries its own, remove '" + architecture + "'"));
    } else if (format.equals(ModelSpec.FORMAT_DJL_PARAMS) && architecture.isEmpty()) {
      problems.add(new SpecProblem("architecture", "required for " + ModelSpec.FORMAT_DJL_PARAMS + ", one of "
          + Architectures.describe()));
    } else if (!architecture.isEmpty()) {
      try {
        Architectures.parse(architecture);
      } catch (IllegalArgumentException e) {
        problems.add(EngineChecks.problem("architecture", e));
      }
    }
    return problems;
  }

  @Override
  public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
    ModelFiles files = DjlModelRunner.precheck(spec);
    Engine engine;
    try {
      engine = EngineSetup.pytorch(spec);
    } catch (RuntimeException | LinkageError e) {
      throw new ModelLoadException("the " + EngineSetup.ENGINE + " engine did not start (is the pytorch-native-cpu"
          + " jar on the class path?): " + e.getMessage(), e);
    }
    EngineSetup.DeviceChoice choice = EngineSetup.chooseDevice(gpuIndices, engine.getGpuCount(),
        EngineSetup.nativeLibrary(engine), spec.allowCpuFallback());
    log.info("model {}: running on {} because {}", spec.uri(), choice.device(), choice.reason());
    DjlModelRunner djl = DjlModelRunner.load(spec, files, choice.device());
    return new Loaded(djl, djl.device(), engine.getVersion(), djl.format(), djl.parameterCount());
  }

  @Override
  public String platform(ModelSpec spec) {
    return spec.format().equals(ModelSpec.FORMAT_DJL_PARAMS) ? "djl_pytorch" : "pytorch_torchscript";
  }
}
