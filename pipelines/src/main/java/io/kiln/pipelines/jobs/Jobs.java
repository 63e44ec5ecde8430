package io.kiln.pipelines.jobs;

import io.kiln.pipelines.CacheIndex;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.PipelineException;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.impl.JobEnv;
import io.kiln.pipelines.impl.JobRunner;
import io.kiln.pipelines.impl.JobSlots;
import io.kiln.pipelines.impl.JobStore;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batch jobs on one node: every node runs one, beside its {@link Pipelines}. A job is submitted on any node,
 * which coordinates it; its spec and status live in the cluster ({@link #status} and {@link #list} from any
 * node), its results in its output folder ({@code <sha256 of the URI>.json} each, written atomically), which
 * is the truth about what finished: submitting the same job again, or {@link #resume resuming} it, redoes
 * only the inputs without a result. When a coordinating node leaves, the leader resumes its running jobs
 * (the output folder must then be reachable from the leader: a shared filesystem, or one host).
 *
 * <p>Each input is fetched and analysed by one node, pinned: an input some node caches goes to that node;
 * the node bounds concurrent fetches by its {@code fetch_slot} resource (default
 * {@value JobSlots#DEFAULT_SLOTS}), the job bounds its inputs in flight per job and per node, and with
 * {@link JobSpec.Priority#LOW} yields to online requests by the pools' reported load.
 *
 * <p><b>Threading:</b> thread-safe and non-blocking. <b>Errors</b> of {@link #submit} and {@link #resume}:
 * {@link PipelineException} NOT_FOUND (no such job, or the deployment has no ready version), INVALID_INPUT
 * (another running job writes to the same output folder; the job still runs), OVERLOADED (this node
 * coordinates {@value #MAX_ACTIVE_JOBS} jobs), UNAVAILABLE (this node's jobs are shut down);
 * {@link io.kiln.runtime.BelowMinimumClusterSizeException} of these and {@link #cancel} where split-brain protection
 * refuses the job's writes (this node is on the smaller side of a partition: nothing was started or asked).
 */
public final class Jobs implements AutoCloseable {

  /** How often a running job's status is rewritten in the cluster at most. */
  public static final long STATUS_PERIOD_MS = 500;
  /** Jobs one node coordinates at once at most. */
  public static final int MAX_ACTIVE_JOBS = 16;

  private static final Logger LOG = LoggerFactory.getLogger(Jobs.class);

  private final KilnRuntime runtime;
  private final DeploymentResolver resolver;
  private final Pipelines pipelines;
  private final JobStore store;
  private final JobRunner runner;
  private final LongSupplier clock;
  private volatile String controlListener;
  private volatile boolean closed;

  public Jobs(KilnRuntime runtime, Pipelines pipelines, DeploymentResolver resolver, PoolLoadBoard board) {
    this(runtime, pipelines, resolver, board, System::currentTimeMillis, STATUS_PERIOD_MS);
  }

  public Jobs(KilnRuntime runtime, Pipelines pipelines, DeploymentResolver resolver, PoolLoadBoard board,
              LongSupplier clockMillis, long statusPeriodMs) {
    this.runtime = runtime;
    this.resolver = resolver;
    this.pipelines = pipelines;
    this.store = new JobStore(runtime);
    this.clock = clockMillis;
    CacheIndex index = pipelines.cacheIndex();
    this.runner = new JobRunner(new JobEnv(runtime, store, board, index, pipelines, clockMillis, statusPeriodMs,
        id -> { }, new io.kiln.pipelines.impl.FileSync("jobs-" + runtime.nodeId())));
  }

  /**
   * Registers the node's fetch slots for job inputs, listens for cancels and, on the leader, for
   * coordinators that leave. Call after the node's {@link Pipelines} started.
   */
  public CompletionStage<Void> start() {
    long slots = runtime.localNode() == null ? 0 : (long) runtime.localNode().total().get("fetch_slot");
    runtime.registerLocalService(JobSlots.class, JobSlots.of(slots > 0 ? (int) slots : JobSlots.DEFAULT_SLOTS));
    controlListener = store.onControl((id, value) -> {
      if (value != null && value.startsWith("cancel")) {
        runner.cancel(id, "cancel requested");
      }
    });
    runtime.addMembershipListener(new MembershipListener() {
      @Override
      public void memberLeft(String memberId) {
        var refusal = runtime.writeRefusal(JobStore.STATUS);
        if (!closed && refusal.isPresent()) {
          // Below the minimum: the larger side's leader adopts this node's jobs; stop dispatching them here, so their
          // inputs are not done on both sides (adopting the larger side's jobs here would be refused anyway).
          if (runner.active() > 0) {
            LOG.warn("node {} is below the minimum cluster size; interrupting the {} jobs it coordinates: {}",
                runtime.nodeId(), runner.active(), refusal.get().getMessage());
            runner.abandonAll("node " + runtime.nodeId() + ", which coordinated the job, is on the smaller side of a"
                + " partition; the larger side's leader resumes it");
          }
        } else if (!closed && runtime.isLeader()) {
          adoptJobsOf(memberId);
        }
      }

      @Override
      public void memberJoined(String memberId) {
        if (!closed && runtime.writeRefusal(JobStore.STATUS).isEmpty()) {
          resumeOwnUnheld();
        }
      }
    });
    return CompletableFuture.completedFuture(null);
  }

  /** Validates the target and starts the job coordinated by this node; completes with its id once recorded. */
  public CompletionStage<String> submit(JobSpec spec) {
    var refusal = runtime.writeRefusal(JobStore.SPECS); // the spec's write refuses too; this also says so at once
    if (refusal.isPresent()) {
      return CompletableFuture.failedFuture(refusal.get());
    }
    String id = spec.name() + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 16);
    return store.putSpec(id, spec).thenCompose(v -> begin(id, spec, clock.getAsLong())).thenApply(v -> id);
  }

  /**
   * Runs a job again under its id on this node: only inputs without a result in its output folder. Refused
   * while the job runs on a live node.
   */
  public CompletionStage<String> resume(String id) {
    var refusal = runtime.writeRefusal(JobStore.STATUS); // before the reads, which on the smaller side may miss
    if (refusal.isPresent()) {
      return CompletableFuture.failedFuture(refusal.get());
    }
    return store.spec(id).thenCompose(spec -> {
      if (spec.isEmpty()) {
        throw new PipelineException(PipelineException.Kind.NOT_FOUND, "no job " + id);
      }
      return store.get(id).thenCompose(st -> {
        if (st.isPresent() && st.get().state() == JobState.RUNNING
            && runtime.members().contains(st.get().coordinator())) {
          throw new PipelineException(PipelineException.Kind.INVALID_INPUT, "job " + id + " is running on node "
              + st.get().coordinator() + "; cancel it first");
        }
        return begin(id, spec.get(), st.map(JobStatus::createdAtMs).orElse(clock.getAsLong()));
      }).thenApply(v -> id);
    });
  }

  private CompletionStage<Void> begin(String id, JobSpec spec, long createdAtMs) {
    if (closed) {
      return CompletableFuture.failedFuture(new PipelineException(PipelineException.Kind.UNAVAILABLE,
          "jobs on node " + runtime.nodeId() + " are shut down"));
    }
    if (runner.active() >= MAX_ACTIVE_JOBS) {
      return CompletableFuture.failedFuture(new PipelineException(PipelineException.Kind.OVERLOADED,
          "node " + runtime.nodeId() + " coordinates " + MAX_ACTIVE_JOBS + " jobs already"));
    }
    CompletionStage<InferTarget> resolved;
    if (!spec.pipeline().isEmpty()) {
      resolved = pipelines.pipeline(spec.pipeline()).thenApply(p -> {
        if (p.isEmpty()) {
          throw new PipelineException(PipelineException.Kind.NOT_FOUND, "no pipeline named '" + spec.pipeline() + "'");
        }
        return null; // a pipeline job has no target of its own
      });
    } else {
      Optional<InferTarget> target = resolver.resolve(spec.deployment());
      if (target.isEmpty()) {
        return CompletableFuture.failedFuture(new PipelineException(PipelineException.Kind.NOT_FOUND,
            "deployment '" + spec.deployment() + "' has no version ready to serve"));
      }
      resolved = CompletableFuture.completedFuture(target.get());
    }
    return resolved.thenCompose(target -> store.list().thenCompose(all -> {
      for (JobStatus s : all) {
        if (!s.id().equals(id) && s.state() == JobState.RUNNING && s.output().equals(spec.output())
            && runtime.members().contains(s.coordinator())) {
          throw new PipelineException(PipelineException.Kind.INVALID_INPUT, "job " + s.id()
              + " is writing to " + spec.output() + "; one job per output folder at a time");
        }
      }
      return runner.start(id, spec, target, createdAtMs);
    }));
  }

  /**
   * After a partition healed: a job recorded as running here that this node does not coordinate (it interrupted it on
   * the smaller side, where that record was refused, and the larger side's leader did not adopt it: it may not have
   * seen this node leave) is resumed here; nobody else would.
   */
  private void resumeOwnUnheld() {
    store.list().thenAccept(all -> {
      for (JobStatus s : all) {
        if (s.state() == JobState.RUNNING && s.coordinator().equals(runtime.nodeId()) && !runner.coordinates(s.id())) {
          LOG.info("job {} is recorded as running here but is not; resuming it", s.id());
          store.spec(s.id()).thenCompose(spec -> spec.isEmpty() ? CompletableFuture.completedFuture(null)
              : begin(s.id(), spec.get(), s.createdAtMs())).whenComplete((v, e) -> {
                if (e != null) {
                  LOG.warn("resuming job {} failed", s.id(), e);
                }
              });
        }
      }
    });
  }

  private void adoptJobsOf(String node) {
    store.list().thenAccept(all -> {
      for (JobStatus s : all) {
        if ((s.state() == JobState.RUNNING || s.state() == JobState.INTERRUPTED) && s.coordinator().equals(node)) {
          LOG.info("job {} lost its coordinator {}; resuming it on {}", s.id(), node, runtime.nodeId());
          resume(s.id()).whenComplete((id, e) -> {
            if (e != null) {
              LOG.warn("resuming job {} failed", s.id(), e);
            }
          });
        }
      }
    });
  }

  /** The job as last recorded, from any node. */
  public CompletionStage<Optional<JobStatus>> status(String id) {
    return store.get(id);
  }

  /** The job's spec (its inputs included). */
  public CompletionStage<Optional<JobSpec>> spec(String id) {
    return store.spec(id);
  }

  /** Jobs known to the cluster, newest first. */
  public CompletionStage<List<JobStatus>> list() {
    return store.list();
  }

  /**
   * Asks the job's coordinator, wherever it is, to stop dispatching; completes with false if there is no
   * such job. Inputs in flight finish and their results are kept.
   */
  public CompletionStage<Boolean> cancel(String id) {
    var refusal = runtime.writeRefusal(JobStore.CONTROL);
    if (refusal.isPresent()) {
      return CompletableFuture.failedFuture(refusal.get());
    }
    return store.get(id).thenCompose(s -> {
      if (s.isEmpty()) {
        return CompletableFuture.completedFuture(false);
      }
      runner.cancel(id, "cancel requested");
      return store.requestCancel(id).thenApply(v -> true);
    });
  }

  /** Completes with the job's final status once it ends, if this node coordinates it; else null. */
  public CompletionStage<JobStatus> ended(String id) {
    return runner.ended(id);
  }

  /** Jobs this node coordinates now. */
  public int active() {
    return runner.active();
  }

  /**
   * Stops coordinating: jobs running here are left INTERRUPTED; the leader resumes them when this node has
   * left the cluster (or {@link #resume} does).
   */
  @Override
  public void close() {
    closed = true;
    runner.abandonAll("node " + runtime.nodeId() + ", which coordinated the job, shut down");
    String l = controlListener;
    if (l != null) {
      store.removeControlListener(l);
    }
  }
}
