package io.kiln.pools;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * How a {@link ModelRunner} was loaded.
 *
 * @param device where the model runs, in DJL's spelling ({@code cpu()}, {@code gpu(0)})
 * @param loadTime from the start of loading (engine start-up included) until the model was ready to warm up
 * @param warmupTime the warm-up inferences, all together
 * @param warmupBatchSizes the batch sizes (in requests) that were run during warm-up, in order
 * @param warmupIterations how many warm-up inferences ran, all batch sizes (and samples) together: each batch is
 *     repeated up to {@link ModelRunners#WARMUP_MAX_ITERATIONS} times within {@link ModelRunners#WARMUP_BUDGET}
 *     (once for models whose engine warms itself)
 * @param engine the engine's name ({@link ModelSpec#engine()})
 * @param engineVersion the engine's version (libtorch's for PyTorch), or "" for built-ins
 * @param format the resolved format, as the engine names it: {@code torchscript}, {@code djl-params}, {@code onnx},
 *     {@code python} or {@code builtin} for Kiln's own
 * @param parameterCount number of model parameters, when the engine could tell cheaply
 * @param warmupSamples the warm-up samples the model was warmed with, as {@code warmup/NAME.json} (the model folder's
 *     OIP JSON requests that fit its signature, in name order); empty: it was warmed with synthetic zeros
 * @param warmupProblems what went wrong in warm-up, each naming the batch or sample file and what the engine (or the
 *     sample's check) said: a warm-up batch the model rejected, a sample skipped; empty when none. A model with
 *     problems still serves: only a failure to load it fails its worker
 */
public record ModelLoadInfo(String device, Duration loadTime, Duration warmupTime, List<Integer> warmupBatchSizes,
                            String engine, String engineVersion, String format, OptionalLong parameterCount,
                            int warmupIterations, List<String> warmupSamples, List<String> warmupProblems) {

  public ModelLoadInfo {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(loadTime, "loadTime");
    Objects.requireNonNull(warmupTime, "warmupTime");
    warmupBatchSizes = List.copyOf(warmupBatchSizes);
    Objects.requireNonNull(engine, "engine");
    engineVersion = engineVersion == null ? "" : engineVersion;
    Objects.requireNonNull(format, "format");
    parameterCount = parameterCount == null ? OptionalLong.empty() : parameterCount;
    if (warmupIterations < 0) {
      throw new IllegalArgumentException("warmupIterations must be >= 0, got " + warmupIterations);
    }
    // Absent in what an older node sent.
    warmupSamples = warmupSamples == null ? List.of() : List.copyOf(warmupSamples);
    warmupProblems = warmupProblems == null ? List.of() : List.copyOf(warmupProblems);
  }

  /** Load figures of a warm-up with synthetic zeros that went without problems. */
  public ModelLoadInfo(String device, Duration loadTime, Duration warmupTime, List<Integer> warmupBatchSizes,
                       String engine, String engineVersion, String format, OptionalLong parameterCount,
                       int warmupIterations) {
    this(device, loadTime, warmupTime, warmupBatchSizes, engine, engineVersion, format, parameterCount,
        warmupIterations, List.of(), List.of());
  }

  /** Load figures of a warm-up that ran each batch size once. */
  public ModelLoadInfo(String device, Duration loadTime, Duration warmupTime, List<Integer> warmupBatchSizes,
                       String engine, String engineVersion, String format, OptionalLong parameterCount) {
    this(device, loadTime, warmupTime, warmupBatchSizes, engine, engineVersion, format, parameterCount,
        warmupBatchSizes.size());
  }
}
