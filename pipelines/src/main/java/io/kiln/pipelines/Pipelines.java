package io.kiln.pipelines;

import io.kiln.pools.PoolClient;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.kiln.pipelines.impl.EventSink;
import io.kiln.pipelines.impl.NodeServices;
import io.kiln.pipelines.impl.RunEnv;
import io.kiln.pipelines.impl.RunReaper;
import io.kiln.pipelines.impl.RunStore;
import io.kiln.pipelines.impl.Runs;
import io.kiln.pipelines.impl.StepGauges;
import io.kiln.pipelines.impl.StepJars;
import io.kiln.pipelines.impl.Webhooks;
import io.vertx.core.eventbus.MessageConsumer;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pipelines on one node: every node runs one. It holds the node's {@link NodeCache} (registered as a
 * node-local service, with the services steps need), keeps the {@link CacheIndex} current, coordinates the
 * runs this node accepts, and on the leader fails runs whose coordinating node left.
 *
 * <p>Pipelines are stored cluster-wide ({@link #apply}); a run can be started on any node and read from any
 * node ({@link #run}). Each step runs as a runtime task placed by its strategy; the run's status is
 * rewritten in the cluster at every transition and each transition is published as a
 * {@link PipelineEvent} on {@link PipelineEvent#ADDRESS}.
 *
 * <p><b>Threading:</b> thread-safe and non-blocking after {@link #start()} (which scans the cache folder on
 * a worker thread); futures complete on Vert.x or backend threads. <b>Errors</b> of {@link #startRun}:
 * {@link PipelineException} NOT_FOUND (no such pipeline), INVALID_INPUT (input missing a placeholder's
 * field, or filling one gives an unusable URI), OVERLOADED (this node coordinates
 * {@link PipelineOptions#maxActiveRuns()} runs already), UNAVAILABLE (not started);
 * {@link io.kiln.runtime.BelowMinimumClusterSizeException} where split-brain protection refuses the run's record (this
 * node is on the smaller side of a partition: nothing was started).
 */
public final class Pipelines implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(Pipelines.class);

  private final KilnRuntime runtime;
  private final PipelineOptions options;
  private final DeploymentResolver resolver;
  private final PoolClient pools;
  private final RunStore store;
  private final EventSink events;
  private final StepGauges gauges = new StepGauges();
  private final CacheIndex index;
  private final ClassLoader stepClasses;
  // Set once by start(); read by API handlers after it completed.
  private volatile NodeCache cache;
  private volatile Runs runs;
  private volatile RunReaper reaper;
  private volatile MessageConsumer<Object> remoteEvents;
  private volatile boolean closed;

  public Pipelines(KilnRuntime runtime, PipelineOptions options, DeploymentResolver resolver) {
    this(runtime, options, resolver, new PoolClient(runtime));
  }

  public Pipelines(KilnRuntime runtime, PipelineOptions options, DeploymentResolver resolver, PoolClient pools) {
    this.runtime = runtime;
    this.options = options;
    this.resolver = resolver;
    this.pools = pools;
    this.store = new RunStore(runtime);
    this.events = new EventSink(runtime.vertx());
    this.index = new CacheIndex(runtime);
    this.stepClasses = StepJars.loader(options.stepsDir(), Pipelines.class.getClassLoader());
  }

  /**
   * Opens this node's cache (adopting what is on disk), publishes it to the index, registers the node's
   * step services, and starts coordinating.
   */
  public CompletionStage<Void> start() {
    return runtime.vertx().executeBlocking(() -> new NodeCache(runtime.nodeId(), options.cacheOptions(),
        options.clockMillis()), false).toCompletionStage().thenCompose(c -> {
          cache = c;
          cache.addListener(index);
          Webhooks webhooks = new Webhooks(options.httpTimeout());
          runtime.registerLocalService(NodeCache.class, cache);
          runtime.registerLocalService(CacheIndex.class, index);
          // A class step that calls several of this node's pools calls them through it (a model graph needs no class).
          runtime.registerLocalService(PoolClient.class, pools);
          runtime.registerLocalService(NodeServices.class, new NodeServices(runtime.nodeId(), cache, pools, webhooks,
              events, gauges, options.clockMillis(), stepClasses, options.maxOutputElements()));
          runs = new Runs(new RunEnv(runtime, store, events, resolver, webhooks, options.clockMillis(), id -> { }),
              options.maxActiveRuns());
          remoteEvents = runtime.vertx().eventBus().consumer(PipelineEvent.ADDRESS,
              m -> runs.remoteEvent(EventSink.decode(m.body())));
          reaper = new RunReaper(runtime, store, index, events, options.clockMillis(), options.runRetention());
          runtime.addMembershipListener(new MembershipListener() {
            @Override
            public void memberLeft(String memberId) {
              // Below the minimum this node can record nothing of the runs it coordinates, and the larger side's
              // leader fails them (their coordinator "left"): stop them here rather than finish them unseen.
              var refusal = runtime.writeRefusal(RunStore.RUNS);
              if (!closed && refusal.isPresent() && runs.active() > 0) {
                LOG.warn("node {} is below the minimum cluster size; ending the {} runs it coordinates: {}",
                    runtime.nodeId(), runs.active(), refusal.get().getMessage());
                runs.abandonAll("node " + runtime.nodeId() + ", which coordinated the run, is on the smaller side of"
                    + " a partition (" + refusal.get().members() + " of at least " + refusal.get().minimum()
                    + " members); start the run again");
              }
            }

            @Override
            public void memberJoined(String memberId) {
              if (!closed && runtime.writeRefusal(RunStore.RUNS).isEmpty()) {
                reaper.failOwnUnheld(runs::coordinates);
              }
              if (!closed && runtime.writeRefusal(CacheIndex.MAP).isEmpty()) {
                index.republish(cache).whenComplete((v, e) -> {
                  if (e != null) {
                    LOG.debug("republishing the cache index after {} joined failed", memberId, e);
                  }
                });
              }
            }
          });
          return index.start().thenCompose(v -> index.publishAll(cache))
              .thenCompose(v -> remoteEvents.completion().toCompletionStage())
              .thenRun(reaper::start);
        });
  }

  /**
   * Where user step classes are loaded from: the jars of {@link PipelineOptions#stepsDir()} over the
   * application's classes. A {@link PipelineLoader} checking classes for this node should use it.
   */
  public ClassLoader stepClassLoader() {
    return stepClasses;
  }

  /** This node's cache; null before {@link #start()} completed. */
  public NodeCache cache() {
    return cache;
  }

  /**
   * The cluster-wide index of caches, for {@code data_key} routing ({@link CacheIndex#nodeFor}); available
   * before {@link #start()}, empty until then.
   */
  public CacheIndex cacheIndex() {
    return index;
  }

  /** Stores pipelines cluster-wide, replacing those of the same names; runs already started keep their spec. */
  public CompletionStage<Void> apply(List<PipelineSpec> specs) {
    return Futures.allOf(specs.stream().map(store::putPipeline).toList());
  }

  public CompletionStage<Optional<PipelineSpec>> pipeline(String name) {
    return store.pipeline(name);
  }

  public CompletionStage<List<PipelineSpec>> pipelines() {
    return store.pipelines();
  }

  /** Removes a pipeline (runs in progress finish); false if there was none. */
  public CompletionStage<Boolean> delete(String name) {
    return store.removePipeline(name);
  }

  /**
   * Starts a run coordinated by this node and completes with its id once its first status is stored (so
   * {@link #run} finds it on any node at once). The run then proceeds on its own.
   */
  public CompletionStage<String> startRun(String pipeline, RunRequest request) {
    Runs here = runs;
    if (here == null) {
      return CompletableFuture.failedFuture(new PipelineException(PipelineException.Kind.UNAVAILABLE,
          "pipelines on node " + runtime.nodeId() + " have not started yet"));
    }
    var refusal = runtime.writeRefusal(RunStore.RUNS);
    if (refusal.isPresent()) { // before the read, which on the smaller side may not find the pipeline
      return CompletableFuture.failedFuture(refusal.get());
    }
    return store.pipeline(pipeline).thenCompose(spec -> {
      if (spec.isEmpty()) {
        throw new PipelineException(PipelineException.Kind.NOT_FOUND, "no pipeline named '" + pipeline + "'");
      }
      return here.start(spec.get(), request);
    });
  }

  /** A run's status as last recorded, from any node; empty if unknown (or forgotten after the retention). */
  public CompletionStage<Optional<RunStatus>> run(String runId) {
    return store.get(runId);
  }

  /** Runs of a pipeline known to the cluster, newest first. */
  public CompletionStage<List<RunStatus>> runs(String pipeline) {
    return store.runs(pipeline);
  }

  /** Step attempts on this node by step name: running, peak and total (slots bound the peak). */
  public Map<String, StepLoad> stepLoads() {
    return gauges.snapshot();
  }

  /** Runs this node coordinates now. */
  public int activeRuns() {
    return runs == null ? 0 : runs.active();
  }

  /**
   * Stops coordinating: runs still in progress here are marked FAILED (their coordinator is going away),
   * then the index and the leader duties stop. The cache stays on disk for the next start.
   */
  @Override
  public void close() {
    closed = true;
    if (runs != null) {
      runs.abandonAll("node " + runtime.nodeId() + ", which coordinated the run, shut down");
    }
    if (remoteEvents != null) {
      remoteEvents.unregister();
    }
    if (reaper != null) {
      reaper.close();
    }
    index.close();
  }
}
