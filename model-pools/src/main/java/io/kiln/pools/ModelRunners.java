package io.kiln.pools;

import io.kiln.pools.impl.RunnerLoader;
import java.time.Duration;
import java.util.List;

/**
 * Loads models into {@link ModelRunner}s.
 *
 * <p>For engine {@value ModelSpec#ENGINE_PYTORCH} the first load in a process starts DJL's PyTorch engine
 * (unpacking the native library into {@code DJL_CACHE_DIR}, default {@code ~/.djl.ai}, the first time on a
 * machine: seconds), in offline mode: nothing is downloaded. PyTorch's thread pools are process-wide: the
 * first spec with non-zero {@code intraOpThreads}/{@code interOpThreads} sets them (unless
 * {@code -Dai.djl.pytorch.num_threads}/{@code num_interop_threads} already did), later different values
 * are logged and ignored.
 *
 * <p>For engine {@value ModelSpec#ENGINE_PYTHON} each runner starts and supervises one Python process of its
 * own (see {@link PythonOptions}); closing the runner stops it. The process sees the worker's GPUs as
 * {@code CUDA_VISIBLE_DEVICES} and its model is told device {@code cuda:0} (or {@code cpu} without GPUs);
 * Kiln does not check that the GPUs exist.
 */
public final class ModelRunners {

  /**
   * How often warm-up repeats each batch size at most. HotSpot compiles a method with its optimising
   * compiler only after thousands of calls (C2's invocation threshold is 5,000): a handful of warm-up
   * inferences leave the runner's Java side interpreted for the first real requests.
   */
  public static final int WARMUP_MAX_ITERATIONS = 1000;
  /**
   * The wall time warm-up may take per runner, all batch sizes together: a slow model (ResNet-18 on a CPU,
   * ~20 ms a call) stops well before {@link #WARMUP_MAX_ITERATIONS}; every size still runs once.
   */
  public static final Duration WARMUP_BUDGET = Duration.ofSeconds(1);

  private ModelRunners() {
  }

  /**
   * Loads the model, then warms it with inferences of zeros for each {@link ModelSpec#warmupBatchSizes()}
   * entry (that many one-row requests, batched), each repeated up to {@link #WARMUP_MAX_ITERATIONS} times
   * within {@link #WARMUP_BUDGET} in all (a {@value ModelSpec#ENGINE_PYTHON} model runs each size once: its
   * process warms itself), before returning; {@link ModelLoadInfo#warmupIterations()} tells how many ran.
   * Blocks for all of it; several threads may load models at once.
   *
   * <p>Device: the GPU {@code gpuIndices.get(0)} when the list is non-empty and the engine reports every
   * listed CUDA device; otherwise the CPU, with a log line saying why. Built-in models always run on the
   * CPU without an engine.
   *
   * @param gpuIndices GPU indices assigned to the worker; empty for a CPU worker
   * @throws ModelLoadException when the model cannot be found, loaded or warmed up (message says why)
   * @throws IllegalArgumentException when a GPU index is negative
   */
  public static ModelRunner load(ModelSpec spec, List<Integer> gpuIndices) {
    return RunnerLoader.load(spec, gpuIndices, System::nanoTime);
  }
}
