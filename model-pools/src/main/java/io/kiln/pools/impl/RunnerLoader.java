package io.kiln.pools.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.Engines;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Loads a runner for a spec through its {@link Engine}, warms it up and records how long each step took. */
public final class RunnerLoader {

  private static final Logger log = LoggerFactory.getLogger(RunnerLoader.class);

  private RunnerLoader() {
  }

  /** See {@link io.kiln.pools.ModelRunners#load}. */
  public static ModelRunner load(ModelSpec requested, List<Integer> gpuIndices, LongSupplier nanoClock) {
    // Every engine loads from a local folder: a remote uri is fetched into the node's model cache first, here on the
    // worker thread that loads the model (the download blocks).
    ModelSpec spec = ModelCache.forNode().localize(requested);
    List<Integer> gpus = List.copyOf(gpuIndices);
    for (int index : gpus) {
      if (index < 0) {
        throw new IllegalArgumentException("gpuIndices: negative GPU index " + index);
      }
    }
    Engine engine = Engines.installed().get(spec.engine());
    long start = nanoClock.getAsLong();
    Engine.Loaded load = engine.load(spec, gpus);
    if (load == null || load.runner() == null) {
      throw new ModelLoadException("engine " + engine.name() + " (" + engine.getClass().getName() + ") loaded no runner"
          + " for model " + spec.uri());
    }
    ModelRunner runner = load.runner();
    String format = load.format();
    String device = load.device();
    long loaded = nanoClock.getAsLong();
    int iterations;
    try {
      // A model that warms itself (a Python model's warmup() in its process) gains nothing from repeated zeros over
      // the pipe; a streaming one may have no predict at all: its own warm-up is all.
      int repeats = !engine.capabilities().warmsItself() ? ModelRunners.WARMUP_MAX_ITERATIONS
          : spec.streaming() ? 0 : 1;
      iterations = warmUp(runner, spec, repeats, loaded, nanoClock);
    } catch (RuntimeException e) {
      runner.close();
      String why = e instanceof InferenceException ? "its spec does not fit the model" : "the model failed";
      throw new ModelLoadException("model " + spec.uri() + " failed its warm-up (" + why + "): " + e.getMessage(), e);
    }
    long warmed = nanoClock.getAsLong();
    ModelLoadInfo info = new ModelLoadInfo(device, Duration.ofNanos(loaded - start), Duration.ofNanos(warmed - loaded),
        spec.warmupBatchSizes(), spec.engine(), load.version(), format, load.parameters(), iterations);
    if (runner instanceof AbstractModelRunner own) {
      own.loaded(info);
    } else {
      runner = ReportingRunner.of(runner, info);
    }
    if (log.isInfoEnabled()) {
      log.info(String.format(Locale.ROOT, "model %s (%s %s) loaded on %s in %.1f ms, warmed up with batch sizes %s"
              + " (%d inferences) in %.1f ms", spec.uri(), spec.engine(), format, device, (loaded - start) / 1e6,
          spec.warmupBatchSizes(), iterations, (warmed - loaded) / 1e6));
    }
    return runner;
  }

  /**
   * Runs each warm-up batch size up to {@code repeats} times. The sizes share
   * {@link ModelRunners#WARMUP_BUDGET}: size {@code i} of {@code n} stops once {@code (i + 1) / n} of it has
   * passed since {@code startNanos} (so time a fast size leaves goes to the later ones), after at least one run.
   * Repeating matters: the JIT compiles the runner's Java side (stacking, the engine's bindings, splitting)
   * only after thousands of calls, and a model served cold runs it interpreted for its first requests.
   *
   * @return how many inferences ran
   */
  static int warmUp(ModelRunner runner, ModelSpec spec, int repeats, long startNanos, LongSupplier nanoClock) {
    List<Integer> sizes = spec.warmupBatchSizes();
    long budget = ModelRunners.WARMUP_BUDGET.toNanos();
    int iterations = 0;
    for (int s = 0; s < sizes.size(); s++) {
      List<InferenceRequest> batch = zeros(spec.inputs(), sizes.get(s));
      long sliceEnd = startNanos + budget / sizes.size() * (s + 1);
      for (int i = 0; i < repeats; i++) {
        runner.infer(batch);
        iterations++;
        if (nanoClock.getAsLong() - sliceEnd >= 0) {
          break;
        }
      }
    }
    return iterations;
  }

  /**
   * {@code size} requests of zeros, each as small as the spec allows: one row (or the fixed first
   * dimension) and 1 for every other dimension the spec leaves open.
   */
  static List<InferenceRequest> zeros(List<TensorSpec> inputs, int size) {
    List<Tensor> tensors = new ArrayList<>(inputs.size());
    for (TensorSpec s : inputs) {
      long[] shape = s.shape();
      for (int d = 0; d < shape.length; d++) {
        shape[d] = shape[d] == -1 ? 1 : shape[d];
      }
      // A BYTES element of zeros is an empty string: its 4-byte length 0.
      long bytes = Tensor.elementCount(shape) * (s.datatype() == DataType.BYTES ? 4 : s.datatype().byteSize());
      tensors.add(new Tensor(s.name(), s.datatype(), shape, new byte[Math.toIntExact(bytes)]));
    }
    InferenceRequest one = new InferenceRequest("warmup", tensors, List.of(), Map.of());
    return Collections.nCopies(size, one);
  }
}
