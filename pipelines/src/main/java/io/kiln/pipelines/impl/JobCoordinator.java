package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobState;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.runtime.Futures;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.RetryPolicy;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives one job on the node that accepted it. A pipeline job starts one run per input (at most
 * {@code per_node} per member, {@code max_in_flight} in all) and lets the pipeline place its steps; what
 * follows is about a deployment job. Inputs wait as indices (their URIs are in
 * the spec; no input's data is ever held here); at most {@code max_in_flight} are dispatched at once, at most
 * {@code per_node} on one node, in batches of {@link #batchSize} inputs, each batch one runtime task pinned to
 * the node that fetches <em>and</em> analyses its inputs ({@link JobTasks}). An input some node already caches (the {@link io.kiln.pipelines.CacheIndex}) waits
 * for room on that node rather than moving; the others go to the node with most room. With priority
 * {@code low} a node's room is its per-node cap less the online requests its pool reports outstanding (at
 * least one, so the job always progresses). A node's room opens when its batch answers; the batch's results
 * are then written by {@link JobOutputs} here as one durable group, and counted only once on disk (until then
 * they stay in flight, within {@code max_in_flight}).
 *
 * <p>Failures: an input whose node died is dispatched again without counting an attempt, as is one a full
 * pool refused (after a back-off); other failures are retried up to {@code retries} times, then recorded in
 * {@code _failed/}. The job ends SUCCEEDED when every input has a result, FAILED when some failed.
 *
 * <p>Parts: {@link InputQueue} chooses which waiting inputs go where, {@link JobSends} knows each node's room
 * and sends the tasks, {@link JobFiles} writes the output folder and {@link JobTally} keeps what the status
 * says; this class keeps the in-flight count, the retries and the job's end.
 *
 * <p>Threading: state is guarded by this object's monitor; completions and timers arrive on any thread;
 * file writes run on worker threads. Nothing blocks an event loop.
 */
final class JobCoordinator {

  private static final Logger LOG = LoggerFactory.getLogger(JobCoordinator.class);
  /** Node losses and full pools a job outlives without using its inputs' retries. */
  private static final RetryPolicy REDISPATCH = RetryPolicy.JOB_REDISPATCH;
  private static final long REFILL_MS = 100;
  private static final String PIPELINE_RUNS = JobSends.PIPELINE_RUNS;

  private final JobEnv env;
  private final String id;
  private final JobSpec spec;
  private final InferTarget target;
  private final JobFiles files;
  private final InputQueue queue = new InputQueue();
  private final JobRoom rooms;
  private final JobSends sends;
  private io.vertx.core.eventbus.MessageConsumer<Object> phases;
  private final byte[] attempts;
  private int freeRedispatches;
  private int inFlight;
  /** The status's state, counts and log lines. */
  private final JobTally tally;
  private long refillTimer = -1;
  private long statusTimer = -1;
  private boolean noPoolLogged;
  private CompletableFuture<Void> lastWrite = CompletableFuture.completedFuture(null);
  private final CompletableFuture<JobStatus> ended = new CompletableFuture<>();

  JobCoordinator(JobEnv env, String id, JobSpec spec, InferTarget target, long createdAtMs) {
    this.env = env;
    this.id = id;
    this.spec = spec;
    this.target = target;
    this.files = new JobFiles(env, id, spec, target);
    this.tally = new JobTally(id, spec, () -> env.runtime().nodeId(), env.clockMillis(), createdAtMs);
    this.attempts = new byte[spec.inputs().size()];
    this.rooms = new JobRoom(spec);
    this.sends = new JobSends(env, id, spec, target, rooms);
  }

  String id() {
    return id;
  }

  CompletionStage<JobStatus> ended() {
    return ended;
  }

  /** Prepares the output folder, skips inputs with a result, records the job and starts dispatching. */
  CompletionStage<Void> start() {
    phases = env.runtime().vertx().eventBus().consumer(JobBatch.PHASE_ADDRESS + id, m -> {
      if (m.body() instanceof io.vertx.core.json.JsonArray a) {
        reachedPool(a);
      }
    });
    return files.prepare().toCompletionStage().thenCompose(have -> {
          synchronized (this) {
            List<String> inputs = spec.inputs();
            int skipped = 0;
            for (int i = 0; i < inputs.size(); i++) {
              if (have.contains(NodeCache.keyOf(inputs.get(i)))) {
                skipped++;
              } else {
                queue.add(i);
              }
            }
            tally.started(skipped);
            log("started on node " + env.runtime().nodeId() + ": " + inputs.size() + " inputs through "
 + spec.target() + (target == null ? "" : "@" + target.version()) + ", " + skipped + " already done, output " + spec.output());
            statusTimer = env.runtime().vertx().setPeriodic(env.statusPeriodMs(), t -> persistIfDirty());
          }
          return persist();
        }).thenRun(() -> {
          synchronized (this) {
            checkEnd(); // every input may have had its result already
          }
          fill();
        });
  }

  // ---- dispatch ---------------------------------------------------------------------------------------

  private void fill() {
    List<InputQueue.Dispatch> out = List.of();
    synchronized (this) {
      if (tally.terminal()) {
        return;
      }
      Map<String, Integer> room = sends.room(now());
      if (room.isEmpty()) {
        if (!noPoolLogged && queue.hasPending()) {
          noPoolLogged = true;
          log("no node serves " + spec.target() + " now; waiting for one");
        }
      } else {
        noPoolLogged = false;
        out = queue.choose(room, spec.maxInFlight() - inFlight, (i, serving) -> sends.cachedNode(spec.inputs().get(i), serving));
      }
      for (InputQueue.Dispatch d : out) {
        inFlight++;
        rooms.dispatched(d.index(), d.node());
      }
      if (!out.isEmpty()) {
        tally.changed();
      }
      if (!queue.isEmpty() && refillTimer < 0) {
        // The load board changes every ~100 ms: look again for room even if nothing completes.
        refillTimer = env.runtime().vertx().setTimer(REFILL_MS, t -> {
          synchronized (this) {
            refillTimer = -1;
          }
          fill();
        });
      }
    }
    if (target == null) {
      out.forEach(d -> runPipeline(d.index()));
      return;
    }
    // One task per batch of inputs bound for one node, in the order they were chosen.
    Map<String, List<Integer>> byNodeNow = new java.util.LinkedHashMap<>();
    for (InputQueue.Dispatch d : out) {
      byNodeNow.computeIfAbsent(d.node(), k -> new java.util.ArrayList<>()).add(d.index());
    }
    int size = batchSize(spec);
    byNodeNow.forEach((node, indices) -> {
      for (int from = 0; from < indices.size(); from += size) {
        dispatch(indices.subList(from, Math.min(indices.size(), from + size)), node);
      }
    });
  }

  /**
   * Inputs in one task: a quarter of the per-node cap (at most {@value JobBatch#MAX_INPUTS}), so a node has
   * four batches in flight: while one is in the pool the others are being placed, fetched and forced to disk,
   * or their results written, and the pool is not left waiting for those slower stages.
   */
  static int batchSize(JobSpec spec) {
    return Math.max(1, Math.min(JobBatch.MAX_INPUTS, spec.perNode() / 4));
  }

  private void dispatch(List<Integer> indices, String node) {
    sends.batch(indices, node).whenComplete((out, err) -> {
      if (err != null) {
        Throwable cause = Futures.unwrapCompletion(err);
        indices.forEach(i -> failedAttempt(i, node, cause));
        return;
      }
      for (JobOutcome.Failure f : out.failed()) {
        failedAttempt(f.index(), node, new StepFailedException(f.message()));
      }
      if (!out.done().isEmpty()) {
        synchronized (this) {
          // The node is done with these inputs: its room opens now, not after their results are on disk, so the
          // next batch is fetched there while these are written. They stay in flight (max_in_flight) until then.
          out.done().forEach(o -> rooms.released(o.index(), node));
        }
        writeBatch(out.done());
        fill();
      }
    });
  }

  private void runPipeline(int i) {
    String uri = spec.inputs().get(i);
    sends.run(uri).whenComplete((result, err) -> {
      if (err != null) {
        failedAttempt(i, PIPELINE_RUNS, Futures.unwrapCompletion(err));
      } else {
        write(i, PIPELINE_RUNS, NodeCache.keyOf(uri), uri, (String) result.get("fetch_node"), result);
      }
    });
  }

  /** Writes a batch's results as one durable group, then counts them (a counted result is on disk, forced). */
  private void writeBatch(List<JobOutcome> done) {
    files.writeBatch(done).onComplete(ar -> {
      synchronized (this) {
        inFlight -= done.size(); // their node's room was released when they came back
        tally.changed();
        if (ar.failed()) {
          count("output");
          tally.failed(done.size());
          log("writing the results of " + done.size() + " inputs failed: " + ar.cause());
          if (!tally.terminal()) {
            end(JobState.FAILED, "the output folder " + spec.output() + " cannot be written: "
                + ar.cause().getMessage());
          } else {
            persist();
          }
          return;
        }
        done.forEach(o -> tally.byNode(o.fetchNode())); // before done(): it may end the job and persist its status
        done(done.size());
      }
      fill();
    });
  }

  /** Holds the monitor. */
  private void done(int n) {
    tally.done(n);
    if (tally.terminal()) {
      persist(); // a cancelled job's last inputs still land; its status says so
    }
    checkEnd();
  }

  /** Writes one input's result, then counts it (so a counted result is always on disk). */
  private void write(int i, String node, String key, String uri, String resultNode, Map<String, Object> result) {
    files.writeResult(key, result).onComplete(ar -> {
      synchronized (this) {
        release(i, node);
        if (ar.failed()) {
          // The folder cannot take results: nothing more can finish; stop rather than spin.
          count("output");
          tally.failed(1);
          log("writing the result of " + uri + " failed: " + ar.cause());
          if (!tally.terminal()) {
            end(JobState.FAILED, "the output folder " + spec.output() + " cannot be written: "
                + ar.cause().getMessage());
          }
          return;
        }
        tally.byNode(resultNode);
        done(1);
      }
      fill();
    });
  }

  private void failedAttempt(int i, String node, Throwable cause) {
    String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    boolean nodeGone = !node.equals(PIPELINE_RUNS)
        && (cause instanceof NodeDiedException || !env.runtime().members().contains(node));
    String uri = spec.inputs().get(i);
    long retryInMs = 0;
    synchronized (this) {
      release(i, node);
      if (tally.terminal()) {
        persist(); // the ended job's in-flight count drains to zero in its status too
        return;
      }
      String why = nodeGone ? "node_lost" : JobResults.causeOf(message);
      count(why);
      RetryPolicy retry = RetryPolicy.JOB_INPUT_RETRY.withMaxRetries(spec.retries());
      if ((nodeGone || why.equals("overloaded")) && REDISPATCH.allows(freeRedispatches + 1)) {
        freeRedispatches++;
        log((nodeGone ? "node " + node + " left while it held " : "pool on " + node + " was full for ") + uri
            + "; dispatching it again (" + REDISPATCH.name() + ")");
        // A node that left holds nothing to wait for; a full pool gets the policy's pause.
        retryInMs = nodeGone ? 0 : REDISPATCH.delayMillis(freeRedispatches);
      } else if (retry.allows(attempts[i] + 1)) {
        attempts[i]++;
        retryInMs = retry.delayMillis(attempts[i]);
        log(uri + " failed on node " + node + " (attempt " + attempts[i] + " of " + (spec.retries() + 1) + ", "
            + retry.name() + "): " + message);
      } else {
        tally.failed(1);
        log(uri + " failed on node " + node + " after " + (attempts[i] + 1) + " attempt(s): " + message);
        files.recordFailure(uri, node, why, message);
        checkEnd();
        retryInMs = -1;
      }
    }
    if (retryInMs == 0) {
      synchronized (this) {
        queue.addFirst(i);
      }
      fill();
    } else if (retryInMs > 0) {
      env.runtime().vertx().setTimer(retryInMs, t -> {
        synchronized (this) {
          queue.addFirst(i);
        }
        fill();
      });
    } else {
      fill();
    }
  }

  // ---- control ---------------------------------------------------------------------------------------

  /** Stops dispatching; inputs in flight finish (their results are still written whole). */
  void cancel(String why) {
    synchronized (this) {
      if (!tally.terminal()) {
        log("cancelled: " + why);
        end(JobState.CANCELLED, why);
      }
    }
  }

  /** The coordinating node is going away: the job is left to be resumed. */
  void abandon(String why) {
    synchronized (this) {
      if (!tally.terminal()) {
        log(why);
        end(JobState.INTERRUPTED, why);
      }
    }
  }

  /** Holds the monitor. */
  private void checkEnd() {
    if (!tally.terminal() && queue.isEmpty() && inFlight == 0) {
      int failed = tally.failedCount();
      int done = tally.doneCount();
      if (failed == 0) {
        log("succeeded: " + done + " of " + spec.inputs().size() + " inputs have results");
        end(JobState.SUCCEEDED, "");
      } else {
        log("failed: " + failed + " input(s) failed after their retries; " + done + " have results");
        end(JobState.FAILED, failed + " input(s) failed after their retries; resume the job to try them again");
      }
    }
  }

  /** Holds the monitor. */
  private void end(JobState s, String why) {
    tally.end(s, why);
    queue.clear();
    if (statusTimer >= 0) {
      env.runtime().vertx().cancelTimer(statusTimer);
    }
    if (refillTimer >= 0) {
      env.runtime().vertx().cancelTimer(refillTimer);
    }
    if (phases != null) {
      phases.unregister();
    }
    JobStatus last = snapshot();
    persist().whenComplete((v, e) -> ended.complete(last));
    env.finished().accept(id);
  }

  private void release(int i, String node) {
    inFlight--;
    rooms.released(i, node);
    tally.changed();
  }

  private void reachedPool(io.vertx.core.json.JsonArray indices) {
    synchronized (this) {
      long t = now();
      for (int k = 0; k < indices.size(); k++) {
        if (indices.getValue(k) instanceof Number n) {
          rooms.reachedPool(n.intValue(), t);
        }
      }
    }
  }

  private void count(String cause) {
    tally.count(cause);
  }

  private void log(String line) {
    tally.log(line);
  }

  private long now() {
    return tally.now();
  }

  JobStatus snapshot() {
    synchronized (this) {
      return tally.peek(inFlight);
    }
  }

  private void persistIfDirty() {
    synchronized (this) {
      if (!tally.dirty()) {
        return;
      }
    }
    persist();
  }

  /** Stores the current status after the previous write, so writes land in order. */
  private CompletionStage<Void> persist() {
    CompletableFuture<Void> next;
    synchronized (this) {
      JobStatus s = tally.snapshot(inFlight);
      next = lastWrite.thenCompose(v -> env.store().put(s)).exceptionally(e -> {
        LOG.debug("storing job {} failed", id, e);
        return null;
      });
      lastWrite = next;
    }
    return next;
  }
}
