package io.kiln.pools;

import io.kiln.runtime.ActorContext;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.pools.impl.StreamHub;
import io.kiln.pools.impl.StreamSteps;
import io.kiln.pools.impl.WorkerGpuMeters;
import io.kiln.pools.impl.WorkerLoadMeters;
import io.kiln.pools.impl.WorkerModels;
import java.time.Duration;
import java.util.OptionalLong;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.runtime.gpu.GpuSnapshot;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor of a pool: an actor holding one warm model. Its constructor loads the model onto the
 * worker's GPU (or the CPU) and warms it, once; afterwards every {@link #infer} call runs a batch on it.
 * Created by its {@link PoolManager} as a named, detached actor pinned to the manager's node, so it
 * outlives a manager restart and the next manager adopts it without reloading.
 *
 * <p><b>Threading:</b> an actor in {@link ExecutionMode#WORKER} mode with {@code max_concurrency} 1 (see
 * {@link #options}): methods run one at a time on the actor's own thread and block it for the duration of
 * the work. Never call them directly; call them through an {@code ActorHandle}.
 *
 * <p><b>Errors:</b> the constructor fails with {@link ModelLoadException} when the model cannot be loaded
 * (the runtime restarts the worker while restarts remain); a warm-up batch the model rejects only warns (see
 * {@link ModelRunners#load}). {@link #infer} fails with an
 * {@link InferenceException} INVALID_INPUT for bad requests (the worker is fine), or with a
 * {@link ModelExecutionException} when the model failed: a failure of that call, which the manager treats
 * as a failed worker and answers by restarting it (reloading its model).
 *
 * <p>A worker of a sequence model ({@link ModelSpec#sequence()}) keeps each of its sequences' state between
 * {@link #infer} calls, feeding it in and taking it out of the answers ({@code SequenceStates}); a restart loses it.
 *
 * <p>Each load increments the counter {@code kiln.pool.worker.loads} (tags deployment, version, node) of
 * the node's {@link MeterRegistry} local service, when the node has one, and records its load and warm-up times;
 * each restart counts in {@code kiln.pool.worker.restarts} ({@link WorkerLoadMeters}). On a node that samples its GPUs
 * (a {@link GpuSampler} local service too) the worker also shows the device it runs on and its model's device
 * memory ({@link WorkerGpuMeters}: {@code kiln.pool.worker.device.info}, {@code kiln.pool.worker.gpu.memory},
 * tagged with its index as {@code worker}) until it closes. A streaming worker records each model step's width (streams
 * advanced by one {@link StreamingModelRunner#next(java.util.List)} call) in {@value #STEP_STREAMS}.
 */
public final class ModelWorker implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ModelWorker.class);

  /** Distribution summary of a streaming pool's workers: streams per model step; its count is the steps taken. */
  public static final String STEP_STREAMS = "kiln.pool.stream.step.streams";

  private final ModelRunner runner; // null for a multiplexed worker
  private final WorkerModels models; // null for a worker of one model
  private final ModelLoadInfo multiplexInfo;
  private final WorkerGpuMeters gpuMeters; // null where the node samples no GPUs
  private final StreamHub streams; // null for a model that does not stream
  private final java.util.function.IntConsumer stepWidth; // streams per model step of the stream loop
  private final String name;
  private final io.kiln.pools.trace.Spans spans;
  private final io.kiln.pools.impl.SequenceStates sequences; // null unless the model keeps sequences

  /** Loads and warms the model; blocks for all of it. Must run as an actor's constructor. */
  public ModelWorker(WorkerSpec spec) {
    ActorContext ctx = ActorContext.current();
    this.name = spec.actorName();
    this.spans = ctx.runtime().localService(io.kiln.pools.trace.Spans.class).orElse(io.kiln.pools.trace.Spans.OFF);
    Optional<MeterRegistry> registry = ctx.runtime().localService(MeterRegistry.class);
    Optional<GpuSampler> gpus = ctx.runtime().localService(GpuSampler.class);
    GpuSnapshot before = gpus.map(GpuSampler::latest).orElse(GpuSnapshot.NONE);
    Tags tags = WorkerLoadMeters.tags(spec.deployment(), spec.version(), spec.node());
    if (ctx.restartCount() > 0) {
      registry.ifPresent(r -> WorkerLoadMeters.restarted(r, tags));
    }
    if (spec.repository() != null) {
      this.runner = null;
      this.streams = null;
      this.stepWidth = n -> { };
      this.gpuMeters = null;
      this.sequences = null;
      this.models = new WorkerModels(spec.repository(), ctx.gpuIndices(), registry.orElse(null), tags);
      this.multiplexInfo = new ModelLoadInfo(ctx.gpuIndices().isEmpty() ? "cpu" : "gpu(" + ctx.gpuIndices().get(0) + ")",
          Duration.ZERO, Duration.ZERO, List.of(), spec.model().engine(), "", "multiplexed", OptionalLong.empty(), 0);
      LOG.info("multiplexed worker {} ready: {} models, at most {} loaded", name, spec.repository().models().size(),
          spec.repository().maxModelsPerWorker());
      return;
    }
    this.models = null;
    this.multiplexInfo = null;
    this.runner = ModelRunners.load(spec.model(), ctx.gpuIndices());
    this.sequences = spec.model().sequence() == null ? null
        : new io.kiln.pools.impl.SequenceStates(spec.model(), name, System::nanoTime);
    registry.ifPresent(r -> WorkerLoadMeters.loaded(r, tags, runner.loadInfo()));
    this.gpuMeters = registry.isPresent() && gpus.isPresent()
        ? WorkerGpuMeters.register(registry.get(), gpus.get(), Tags.of("deployment", spec.deployment(), "version",
            spec.version(), "node", spec.node(), "worker", Integer.toString(spec.index())), runner.loadInfo().device(),
            runner.processId(), before, gpus.get().nanoTime())
        : null;
    registry.ifPresent(r -> runner.bindMeters(r, Tags.of("deployment", spec.deployment(), "version", spec.version(),
        "node", spec.node(), "worker", Integer.toString(spec.index()))));
    if (spec.model().streaming() && runner instanceof StreamingModelRunner) {
      this.streams = StreamHub.of(ctx.runtime());
      streams.awaitRegistered();
      this.stepWidth = registry.<java.util.function.IntConsumer>map(r -> io.micrometer.core.instrument.DistributionSummary
          .builder(STEP_STREAMS).description("Streams advanced by one model step of a streaming worker (count: steps)")
          .tags("deployment", spec.deployment(), "version", spec.version(), "node", spec.node())
          .register(r)::record).orElse(n -> { });
    } else {
      this.streams = null;
      this.stepWidth = n -> { };
    }
    LOG.info("worker {} ready on {} (restart {})", spec.actorName(), runner.loadInfo().device(), ctx.restartCount());
  }

  /**
   * The options a pool creates worker {@code index} with: named {@link PoolNames#worker}, in namespace
   * {@value PoolManager#NAMESPACE}, detached, get-if-exists, hard affinity to the pool's node, the pool's
   * worker resources and restart budget, serial on a thread of its own.
   */
  public static ActorOptions options(PoolSpec spec, int index) {
    return ActorOptions.builder()
        .name(PoolNames.worker(spec.deployment(), spec.version(), spec.nodeId(), index))
        .namespace(PoolManager.NAMESPACE)
        .detached()
        .getIfExists(true)
        .resources(spec.workerResources())
        .strategy(SchedulingStrategy.onNode(spec.nodeId()))
        .maxRestarts(spec.workerMaxRestarts())
        .mode(ExecutionMode.WORKER)
        .maxConcurrency(1)
        .build();
  }

  /**
   * Runs one batch; see {@link ModelRunner#infer}. {@code traces} is what its requests carry for their logs and
   * spans across the actor call: either one per request, in batch order (null for one without), or the shared
   * {@code List.of()} when none of them is traced, which costs nothing. While a batch holding a traced request
   * runs, this thread's log lines name the first traced request (its id and trace id), and when the node exports
   * spans each traced, sampled request gets a {@code kiln.worker.batch} span of the batch's compute (parent: the
   * span its traceparent names; attributes {@code kiln.worker}, {@code kiln.batch.size}).
   *
   * @return one output list per request, in request order
   * @throws IllegalArgumentException when {@code traces} is neither empty nor one per request
   */
  public List<List<Tensor>> infer(List<InferenceRequest> batch, List<io.kiln.pools.trace.RequestTrace> traces) {
    if (traces.isEmpty()) {
      return run(batch);
    }
    if (traces.size() != batch.size()) {
      throw new IllegalArgumentException("traces: " + traces.size() + " for a batch of " + batch.size()
          + " requests (one per request, or none)");
    }
    io.kiln.pools.trace.RequestTrace first = null;
    for (io.kiln.pools.trace.RequestTrace t : traces) {
      if (t != null) {
        first = t;
        break;
      }
    }
    List<io.kiln.pools.trace.Spans.Span> open = List.of();
    if (spans.enabled()) {
      open = new java.util.ArrayList<>(traces.size());
      for (io.kiln.pools.trace.RequestTrace t : traces) {
        io.kiln.pools.trace.TraceParent parent = t == null ? null : io.kiln.pools.trace.TraceParent.parse(t.traceparent());
        if (parent != null && parent.sampled()) {
          open.add(spans.start("kiln.worker.batch", parent, t.tracestate(), false).attribute("kiln.worker", name)
              .attribute("kiln.batch.size", batch.size()));
        }
      }
    }
    try (io.kiln.pools.trace.RequestLog.Scope log = io.kiln.pools.trace.RequestLog.open(first)) {
      List<List<Tensor>> out = run(batch);
      open.forEach(io.kiln.pools.trace.Spans.Span::end);
      return out;
    } catch (RuntimeException | Error e) {
      open.forEach(span -> span.error(e.toString()).end());
      throw e;
    }
  }

  private List<List<Tensor>> run(List<InferenceRequest> batch) {
    if (sequences != null) {
      return sequences.run(batch, runner::infer);
    }
    return models != null ? models.infer(batch) : runner.infer(batch);
  }

  /**
   * Frees the state of sequences its pool ended or expired (see {@link SequenceSpec}); ids it does not hold are
   * ignored. Runs in turn with the batches, so a state is never freed under a batch using it.
   *
   * @return how many it held
   */
  public int endSequences(List<String> ids) {
    return sequences == null ? 0 : sequences.end(ids);
  }

  /** How many sequences hold state on this worker (0 for a model without sequences). */
  public int openSequences() {
    return sequences == null ? 0 : sequences.size();
  }

  /**
   * A multiplexed worker loads {@code model} of its repository unless it holds it (see {@link WorkerModels}).
   *
   * @return whether it loaded it now
   * @throws InferenceException NOT_FOUND for a model not in the repository, INTERNAL when it failed to load,
   *     INVALID_INPUT on a worker of one model
   */
  public boolean loadModel(String model) {
    return multiplexed().load(model);
  }

  /** A multiplexed worker closes {@code model} if it holds it; returns whether it did. */
  public boolean unloadModel(String model) {
    return multiplexed().unload(model);
  }

  /** The models a multiplexed worker holds, least recently used first (empty for a worker of one model). */
  public List<String> loadedModels() {
    return models == null ? List.of() : models.loaded();
  }

  private WorkerModels multiplexed() {
    if (models == null) {
      throw InferenceException.invalid("worker " + name + " serves one model: it has no repository");
    }
    return models;
  }

  /**
   * Runs this worker's step loop over the streams its pool offers it (see {@link StreamSteps}): streams join at the
   * next step and leave when over, each chunk going straight to its stream's receiver; returns once none is open
   * or waiting. Blocks for all of it. The pool manager calls it (through the worker's channel) when it offers a
   * stream while no loop runs.
   *
   * @return how many streams it ran
   * @throws InferenceException INVALID_INPUT when the model does not stream
   */
  public int streamLoop() {
    if (!(runner instanceof StreamingModelRunner streaming) || streams == null) {
      throw InferenceException.invalid("model " + (runner == null ? name : runner.spec().uri()) + " does not stream");
    }
    return StreamSteps.loop(streaming, streams, name, System::nanoTime, stepWidth);
  }

  /** How the model was loaded and warmed. */
  public ModelLoadInfo loadInfo() {
    return runner == null ? multiplexInfo : runner.loadInfo();
  }

  /** Releases the model (the runtime calls it when the worker dies or restarts). */
  @Override
  public void close() {
    if (gpuMeters != null) {
      gpuMeters.close();
    }
    if (models != null) {
      models.close();
    } else {
      runner.close();
    }
  }
}
