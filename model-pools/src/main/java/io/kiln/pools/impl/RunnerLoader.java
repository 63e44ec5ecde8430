package io.kiln.pools.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.Engines;
import io.kiln.pools.spi.SpecMismatchException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
    Warmup warm;
    try {
      // A model that warms itself (a Python model's warmup() in its process) gains nothing from repeated zeros over
      // the pipe; a streaming one may have no predict at all: its own warm-up is all.
      int repeats = !engine.capabilities().warmsItself() ? ModelRunners.WARMUP_MAX_ITERATIONS
          : spec.streaming() ? 0 : 1;
      WarmupSamples.Found found = repeats == 0 ? WarmupSamples.Found.NONE : WarmupSamples.read(spec);
      // The budget is the inferences': reading big sample files does not eat it.
      warm = warmUp(runner, spec, found.samples(), repeats, nanoClock.getAsLong(), nanoClock);
      warm = warm.after(found.problems());
    } catch (RuntimeException e) {
      runner.close();
      throw e instanceof ModelLoadException mle ? mle : new ModelLoadException("model " + spec.uri()
          + " failed its warm-up: " + e.getMessage(), e);
    }
    long warmed = nanoClock.getAsLong();
    ModelLoadInfo info = new ModelLoadInfo(device, Duration.ofNanos(loaded - start), Duration.ofNanos(warmed - loaded),
        spec.warmupBatchSizes(), spec.engine(), load.version(), format, load.parameters(), warm.iterations(),
        warm.samples(), warm.problems());
    if (runner instanceof AbstractModelRunner own) {
      own.loaded(info);
    } else {
      runner = ReportingRunner.of(runner, info);
    }
    if (log.isInfoEnabled()) {
      log.info(String.format(Locale.ROOT, "model %s (%s %s) loaded on %s in %.1f ms, warmed up with batch sizes %s"
              + " (%d inferences) in %.1f ms, from %s%s", spec.uri(), spec.engine(), format, device,
          (loaded - start) / 1e6, spec.warmupBatchSizes(), warm.iterations(), (warmed - loaded) / 1e6,
          warm.samples().isEmpty() ? WarmupSamples.ZEROS : "samples " + warm.samples(),
          warm.problems().isEmpty() ? "" : " (" + warm.problems().size() + " warm-up problem(s), each in a WARN)"));
    }
    return runner;
  }

  /**
   * What a warm-up did.
   *
   * @param samples the samples it ran, by name; empty when it ran synthetic zeros
   * @param problems a line for each batch the model rejected (and, see {@link #after}, each sample skipped)
   */
  record Warmup(int iterations, List<String> samples, List<String> problems) {

    /** This warm-up with {@code earlier} problems (the samples skipped before it ran) listed first. */
    Warmup after(List<String> earlier) {
      if (earlier.isEmpty()) {
        return this;
      }
      List<String> all = new ArrayList<>(earlier);
      all.addAll(problems);
      return new Warmup(iterations, samples, List.copyOf(all));
    }
  }

  /** {@link #warmUp(ModelRunner, ModelSpec, List, int, long, LongSupplier)} with synthetic zeros. */
  static int warmUp(ModelRunner runner, ModelSpec spec, int repeats, long startNanos, LongSupplier nanoClock) {
    return warmUp(runner, spec, List.of(), repeats, startNanos, nanoClock).iterations();
  }

  /**
   * Runs each warm-up batch size up to {@code repeats} times with each sample ({@code size} copies of it batched), or
   * with synthetic zeros when there are no samples. The (size, sample) batches share
   * {@link ModelRunners#WARMUP_BUDGET}: batch {@code i} of {@code n} stops once {@code (i + 1) / n} of it has
   * passed since {@code startNanos} (so time a fast one leaves goes to the later ones), after at least one run.
   * Repeating matters: the JIT compiles the runner's Java side (stacking, the engine's bindings, splitting)
   * only after thousands of calls, and a model served cold runs it interpreted for its first requests.
   *
   * <p>A batch the model rejects (any runtime exception) is a problem, not a failure: one WARN names the model, the
   * batch and the engine's message, that sample is not run again, and the model serves. Two exceptions fail the load:
   * outputs that contradict the spec ({@link SpecMismatchException}: the model took the input, the spec is wrong,
   * and every request would fail alike), and a runner that cannot go on after the failure (a Python model's process
   * died or was killed; a restarted worker starts afresh).
   *
   * @throws ModelLoadException when the model's outputs contradict the spec or a failed batch left the runner
   *     unusable
   */
  static Warmup warmUp(ModelRunner runner, ModelSpec spec, List<WarmupSamples.Sample> samples, int repeats,
                       long startNanos, LongSupplier nanoClock) {
    List<Integer> sizes = spec.warmupBatchSizes();
    List<WarmupSamples.Sample> inputs = samples.isEmpty()
        ? List.of(new WarmupSamples.Sample(WarmupSamples.ZEROS, zeros(spec.inputs(), 1).get(0))) : samples;
    boolean[] rejected = new boolean[inputs.size()];
    List<String> problems = new ArrayList<>();
    long budget = ModelRunners.WARMUP_BUDGET.toNanos();
    int batches = sizes.size() * inputs.size();
    int iterations = 0;
    for (int s = 0; s < sizes.size(); s++) {
      for (int k = 0; k < inputs.size(); k++) {
        if (rejected[k]) {
          continue;
        }
        List<InferenceRequest> batch = Collections.nCopies(sizes.get(s), inputs.get(k).request());
        long sliceEnd = startNanos + budget / batches * (s * inputs.size() + k + 1);
        try {
          for (int i = 0; i < repeats; i++) {
            runner.infer(batch);
            iterations++;
            if (nanoClock.getAsLong() - sliceEnd >= 0) {
              break;
            }
          }
        } catch (RuntimeException e) {
          String what = describe(inputs.get(k), sizes.get(s));
          String why = e.getMessage() == null ? e.toString() : e.getMessage();
          if (e instanceof SpecMismatchException) {
            throw new ModelLoadException("model " + spec.uri() + " failed its warm-up on " + what + ": its spec does"
                + " not fit the model: " + why, e);
          }
          if (!usable(runner)) {
            throw new ModelLoadException("model " + spec.uri() + " failed its warm-up on " + what + " and cannot"
                + " go on: " + why, e);
          }
          rejected[k] = true;
          String problem = what + " was rejected: " + why;
          problems.add(problem);
          log.warn("model {}: {}; it serves without that warm-up{}", spec.uri(), problem, samples.isEmpty()
              ? " (give it real requests to warm with: OIP JSON files in " + WarmupSamples.FOLDER + "/ of its folder,"
              + " see docs/warmup.md)" : "");
        }
      }
    }
    return new Warmup(iterations, samples.stream().map(WarmupSamples.Sample::name).toList(), List.copyOf(problems));
  }

  /** E.g. {@code warm-up batch of 8 requests of warmup/a.json (input FP32[1, 16000])}. */
  private static String describe(WarmupSamples.Sample sample, int size) {
    StringBuilder b = new StringBuilder("warm-up batch of ").append(size).append(size == 1 ? " request of " : " requests of ")
        .append(sample.name()).append(" (");
    List<Tensor> tensors = sample.request().inputs();
    for (int i = 0; i < tensors.size(); i++) {
      Tensor t = tensors.get(i);
      b.append(i == 0 ? "" : ", ").append(t.name()).append(' ').append(t.datatype()).append(Arrays.toString(t.shape()));
    }
    return b.append(')').toString();
  }

  /** Whether a runner that just failed a batch can run the next: only Kiln's own runners can tell otherwise. */
  private static boolean usable(ModelRunner runner) {
    return !(runner instanceof AbstractModelRunner own) || own.usable();
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
