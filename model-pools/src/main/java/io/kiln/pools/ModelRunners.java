package io.kiln.pools;

import io.kiln.pools.impl.RunnerLoader;
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

  private ModelRunners() {
  }

  /**
   * Loads the model, then runs one warm-up inference of zeros per {@link ModelSpec#warmupBatchSizes()}
   * entry (that many one-row requests, batched) before returning. Blocks for all of it; several threads
   * may load models at once.
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
