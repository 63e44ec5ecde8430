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
 * @param engine {@value ModelSpec#ENGINE_PYTORCH} or {@value ModelSpec#ENGINE_BUILTIN}
 * @param engineVersion the engine's version (libtorch's for PyTorch), or "" for built-ins
 * @param format the resolved format: {@code torchscript}, {@code djl-params} or {@code builtin}
 * @param parameterCount number of model parameters, when the engine could tell cheaply
 */
public record ModelLoadInfo(String device, Duration loadTime, Duration warmupTime, List<Integer> warmupBatchSizes,
                            String engine, String engineVersion, String format, OptionalLong parameterCount) {

  public ModelLoadInfo {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(loadTime, "loadTime");
    Objects.requireNonNull(warmupTime, "warmupTime");
    warmupBatchSizes = List.copyOf(warmupBatchSizes);
    Objects.requireNonNull(engine, "engine");
    engineVersion = engineVersion == null ? "" : engineVersion;
    Objects.requireNonNull(format, "format");
    parameterCount = parameterCount == null ? OptionalLong.empty() : parameterCount;
  }
}
