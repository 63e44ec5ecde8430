package io.kiln.pools;

import io.kiln.pools.impl.RunnerLoader;
import java.time.Duration;
import java.util.List;

/**
 * Loads models into {@link ModelRunner}s.
 *
 * <p>A spec's {@link ModelSpec#engine()} names the {@link io.kiln.pools.spi.Engine} that loads it (see
 * {@link io.kiln.pools.spi.Engines}); what loading does for each of Kiln's engines is said in its class
 * ({@code io.kiln.engines.pytorch.PyTorchEngine}, {@code OnnxEngine}, {@code PythonEngine}, {@code BuiltinEngine}).
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
   * Loads the model, then warms it for each {@link ModelSpec#warmupBatchSizes()} entry with that many one-row
   * requests of zeros, batched, each batch repeated up to {@link #WARMUP_MAX_ITERATIONS} times within
   * {@link #WARMUP_BUDGET} in all (a model whose engine
   * {@link io.kiln.pools.spi.Engine.Capabilities#warmsItself() warms itself}, a Python one, runs each batch once),
   * before returning; {@link ModelLoadInfo#warmupIterations()} tells how many ran. Blocks for all of it; several
   * threads may load models at once.
   *
   * <p>Warm-up samples: a model folder holding {@code warmup/*.json}, OIP JSON inference requests (what a client
   * posts to {@code /v2/models/{m}/infer}), is warmed with those instead of zeros: each batch size with each sample
   * (that many copies of it), the budget shared by all. A file that does not fit the spec's signature is skipped with
   * a WARN naming it and the field ({@link ModelLoadInfo#warmupSamples()} lists those run).
   *
   * <p>Warm-up never fails a model that loaded: a batch the model rejects (zeros it cannot take, an engine error) is
   * logged as one WARN naming the model, the batch and the engine's message, recorded in
   * {@link ModelLoadInfo#warmupProblems()}, and the model serves. Only two warm-up failures fail the load: outputs
   * that contradict the spec (a datatype, rank or fixed dimension it does not declare: every request would fail
   * alike), and a runner left unusable (a Python model's process that died or hung).
   *
   * <p>Device: the GPU {@code gpuIndices.get(0)} when the list is non-empty and the engine reports every
   * listed CUDA device; otherwise the CPU, with a log line saying why. Built-in models always run on the
   * CPU without an engine.
   *
   * @param gpuIndices GPU indices assigned to the worker; empty for a CPU worker
   * @throws ModelLoadException when the model cannot be found or loaded, its warm-up outputs contradict the spec,
   *     or warm-up left its runner unusable (message says why)
   * @throws IllegalArgumentException when a GPU index is negative
   */
  public static ModelRunner load(ModelSpec spec, List<Integer> gpuIndices) {
    return RunnerLoader.load(spec, gpuIndices, System::nanoTime);
  }
}
