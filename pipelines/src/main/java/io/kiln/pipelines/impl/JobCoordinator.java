package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobState;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.runtime.Futures;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.TaskOptions;
import io.kiln.runtime.WireCodec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
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
 * <p>Threading: state is guarded by this object's monitor; completions and timers arrive on any thread;
 * file writes run on worker threads. Nothing blocks an event loop.
 */
final class JobCoordinator {

  private static final Logger LOG = LoggerFactory.getLogger(JobCoordinator.class);
  private static final int MAX_FREE_REDISPATCHES = 1000;
  private static final long REFILL_MS = 100;
  /** The one "node" of a pipeline job's bookkeeping: runs place themselves. */
  static final String PIPELINE_RUNS = "";

  private final JobEnv env;
  private final String id;
  private final JobSpec spec;
  private final InferTarget target;
  private final JobOutputs outputs;
  private final long createdAtMs;
  private final ArrayDeque<Integer> pending = new ArrayDeque<>();
  private final Map<String, ArrayDeque<Integer>> waiting = new HashMap<>();
  private final JobRoom rooms;
  private io.vertx.core.eventbus.MessageConsumer<Object> phases;
  private final byte[] attempts;
  private int freeRedispatches;
  private int inFlight;
  private int done;
  private int skipped;
  private int failed;
  private int doneHere;
  private final Map<String, Long> causes = new TreeMap<>();
  private final Map<String, Long> byNode = new TreeMap<>();
  private final ArrayDeque<String> logs = new ArrayDeque<>();
  private JobState state = JobState.RUNNING;
  private String error = "";
  private long startedAtMs;
  private long endedAtMs;
  private boolean dirty = true;
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
    this.outputs = new JobOutputs(Path.of(spec.output()), env.sync());
    this.createdAtMs = createdAtMs;
    this.attempts = new byte[spec.inputs().size()];
    this.rooms = new JobRoom(spec);
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
    return env.runtime().vertx().executeBlocking(() -> outputs.prepare(WireCodec.toJson(spec).getBytes(
        java.nio.charset.StandardCharsets.UTF_8)), false).toCompletionStage().thenCompose(have -> {
          synchronized (this) {
            startedAtMs = now();
            List<String> inputs = spec.inputs();
            for (int i = 0; i < inputs.size(); i++) {
              if (have.contains(NodeCache.keyOf(inputs.get(i)))) {
                skipped++;
              } else {
                pending.add(i);
              }
            }
            done = skipped;
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
    record Dispatch(int index, String node) { }
    List<Dispatch> out = new java.util.ArrayList<>();
    synchronized (this) {
      if (state.terminal()) {
        return;
      }
      Map<String, Integer> room = room();
      if (room.isEmpty()) {
        if (!noPoolLogged && !pending.isEmpty()) {
          noPoolLogged = true;
          log("no node serves " + spec.target() + " now; waiting for one");
        }
      } else {
        noPoolLogged = false;
        // Inputs waiting for a node that no longer serves (it left, or its pool went) wait no more.
        for (var it = waiting.entrySet().iterator(); it.hasNext(); ) {
          var e = it.next();
          if (!room.containsKey(e.getKey())) {
            e.getValue().descendingIterator().forEachRemaining(pending::addFirst);
            it.remove();
          }
        }
        // Inputs waiting for the node that caches them go first, where that node has room.
        for (var e : waiting.entrySet()) {
          int free = room.getOrDefault(e.getKey(), 0);
          while (free > 0 && inFlight + out.size() < spec.maxInFlight() && !e.getValue().isEmpty()) {
            out.add(new Dispatch(e.getValue().poll(), e.getKey()));
            free--;
          }
          room.put(e.getKey(), free);
        }
        waiting.values().removeIf(ArrayDeque::isEmpty);
        while (inFlight + out.size() < spec.maxInFlight() && !pending.isEmpty()) {
          int i = pending.peek();
          String cachedOn = cachedNode(spec.inputs().get(i), room.keySet());
          if (cachedOn != null) {
            pending.poll();
            if (room.get(cachedOn) > 0) {
              room.merge(cachedOn, -1, Integer::sum);
              out.add(new Dispatch(i, cachedOn));
            } else {
              waiting.computeIfAbsent(cachedOn, k -> new ArrayDeque<>()).add(i);
            }
            continue;
          }
          String best = null;
          for (var e : room.entrySet()) {
            if (e.getValue() > 0 && (best == null || e.getValue() > room.get(best))) {
              best = e.getKey();
            }
          }
          if (best == null) {
            break;
          }
          pending.poll();
          room.merge(best, -1, Integer::sum);
          out.add(new Dispatch(i, best));
        }
      }
      for (Dispatch d : out) {
        inFlight++;
        rooms.dispatched(d.index(), d.node());
      }
      dirty |= !out.isEmpty();
      if ((!pending.isEmpty() || !waiting.isEmpty()) && refillTimer < 0) {
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
    for (Dispatch d : out) {
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

  /** Free places per node serving the deployment (one pseudo-node for a pipeline job); holds the monitor. */
  private Map<String, Integer> room() {
    if (target == null) {
      // A pipeline job: each input is one run, placed by the pipeline's own steps (its fetch step's strategy
      // and slots, its infer step pinned to the fetch's node); the job bounds only how many run at once.
      int cap = Math.min(spec.perNode() * Math.max(1, env.runtime().members().size()), spec.maxInFlight());
      Map<String, Integer> room = new TreeMap<>();
      room.put(PIPELINE_RUNS, cap - rooms.inFlightOn(PIPELINE_RUNS));
      return room;
    }
    return rooms.room(target, env.board().pools(target.deployment(), target.version()),
        Set.copyOf(env.runtime().members()), now());
  }

  /** A node serving the deployment that caches {@code uri}, or null. */
  private String cachedNode(String uri, Set<String> serving) {
    if (target == null) {
      return null;
    }
    for (String n : env.index().nodesFor(NodeCache.keyOf(uri))) {
      if (serving.contains(n)) {
        return n;
      }
    }
    return null;
  }

  private void dispatch(List<Integer> indices, String node) {
    JobBatch batch = new JobBatch(id, indices, indices.stream().map(spec.inputs()::get).toList(), target.deployment(),
        target.version(), target.inputs(), spec.format(), spec.tensor(), spec.maxBytes(), spec.timeoutMs());
    // No CPU of the node's ledger: the task mostly waits (downloads, the pool's answers); per_node bounds how many
    // inputs a node has, its fetch slots how many downloads, and the pool's workers hold the model's resources.
    TaskOptions options = TaskOptions.builder().resources(io.kiln.runtime.Resources.NONE)
        .strategy(SchedulingStrategy.onNode(node)).maxRetries(0)
        .retryExceptions(false).placementTimeout(Duration.ofMillis(spec.timeoutMs()))
        .timeout(Duration.ofMillis(2 * spec.timeoutMs() + 15_000)).build(); // the group's fetch, then its analyses
    CompletionStage<JobOutcome.Batch> call;
    try {
      call = env.runtime().task(JobTasks::runBatch, batch).options(options).remote();
    } catch (RuntimeException e) {
      call = CompletableFuture.failedFuture(e);
    }
    call.whenComplete((out, err) -> {
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
    PipelineJobRuns.run(env, spec, id, uri).whenComplete((result, err) -> {
      if (err != null) {
        failedAttempt(i, PIPELINE_RUNS, Futures.unwrapCompletion(err));
      } else {
        write(i, PIPELINE_RUNS, NodeCache.keyOf(uri), uri, (String) result.get("fetch_node"), result);
      }
    });
  }

  /** Writes a batch's results as one durable group, then counts them (a counted result is on disk, forced). */
  private void writeBatch(List<JobOutcome> done) {
    List<JobOutputs.Result> results = new java.util.ArrayList<>(done.size());
    for (JobOutcome o : done) {
      results.add(new JobOutputs.Result(o.key(), WireCodec.toJson(JobResults.result(id, target, o))
          .getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }
    env.runtime().vertx().executeBlocking(() -> {
      outputs.writeResults(results);
      return null;
    }, false).onComplete(ar -> {
      synchronized (this) {
        inFlight -= done.size(); // their node's room was released when they came back
        dirty = true;
        if (ar.failed()) {
          count("output");
          failed += done.size();
          log("writing the results of " + done.size() + " inputs failed: " + ar.cause());
          if (!state.terminal()) {
            end(JobState.FAILED, "the output folder " + spec.output() + " cannot be written: "
                + ar.cause().getMessage());
          } else {
            persist();
          }
          return;
        }
        done(done.size());
        done.forEach(o -> byNode.merge(o.fetchNode(), 1L, Long::sum));
      }
      fill();
    });
  }

  /** Holds the monitor. */
  private void done(int n) {
    this.done += n;
    doneHere += n;
    dirty = true;
    if (state.terminal()) {
      persist(); // a cancelled job's last inputs still land; its status says so
    }
    checkEnd();
  }

  /** Writes one input's result, then counts it (so a counted result is always on disk). */
  private void write(int i, String node, String key, String uri, String resultNode, Map<String, Object> result) {
    byte[] json = WireCodec.toJson(result).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    env.runtime().vertx().executeBlocking(() -> {
      outputs.writeResult(key, json);
      return null;
    }, false).onComplete(ar -> {
      synchronized (this) {
        release(i, node);
        if (ar.failed()) {
          // The folder cannot take results: nothing more can finish; stop rather than spin.
          count("output");
          failed++;
          log("writing the result of " + uri + " failed: " + ar.cause());
          if (!state.terminal()) {
            end(JobState.FAILED, "the output folder " + spec.output() + " cannot be written: "
                + ar.cause().getMessage());
          }
          return;
        }
        byNode.merge(resultNode, 1L, Long::sum);
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
      if (state.terminal()) {
        persist(); // the ended job's in-flight count drains to zero in its status too
        return;
      }
      String why = nodeGone ? "node_lost" : JobResults.causeOf(message);
      count(why);
      if ((nodeGone || why.equals("overloaded")) && freeRedispatches < MAX_FREE_REDISPATCHES) {
        freeRedispatches++;
        log((nodeGone ? "node " + node + " left while it held " : "pool on " + node + " was full for ") + uri
            + "; dispatching it again");
        retryInMs = nodeGone ? 0 : 200;
      } else if (attempts[i] < spec.retries()) {
        attempts[i]++;
        retryInMs = Math.min(5_000, 100L << Math.min(6, attempts[i]));
        log(uri + " failed on node " + node + " (attempt " + attempts[i] + " of " + (spec.retries() + 1) + "): "
            + message);
      } else {
        failed++;
        log(uri + " failed on node " + node + " after " + (attempts[i] + 1) + " attempt(s): " + message);
        recordFailure(uri, node, why, message);
        dirty = true;
        checkEnd();
        retryInMs = -1;
      }
    }
    if (retryInMs == 0) {
      synchronized (this) {
        pending.addFirst(i);
      }
      fill();
    } else if (retryInMs > 0) {
      env.runtime().vertx().setTimer(retryInMs, t -> {
        synchronized (this) {
          pending.addFirst(i);
        }
        fill();
      });
    } else {
      fill();
    }
  }

  private void recordFailure(String uri, String node, String why, String message) {
    byte[] json = WireCodec.toJson(JobResults.failure(id, uri, node, why, message))
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    env.runtime().vertx().executeBlocking(() -> {
      outputs.writeFailure(NodeCache.keyOf(uri), json);
      return null;
    }, false).onFailure(e -> LOG.warn("job {}: recording the failure of {} failed", id, uri, e));
  }

  // ---- control ---------------------------------------------------------------------------------------

  /** Stops dispatching; inputs in flight finish (their results are still written whole). */
  void cancel(String why) {
    synchronized (this) {
      if (!state.terminal()) {
        log("cancelled: " + why);
        end(JobState.CANCELLED, why);
      }
    }
  }

  /** The coordinating node is going away: the job is left to be resumed. */
  void abandon(String why) {
    synchronized (this) {
      if (!state.terminal()) {
        log(why);
        end(JobState.INTERRUPTED, why);
      }
    }
  }

  /** Holds the monitor. */
  private void checkEnd() {
    if (!state.terminal() && pending.isEmpty() && waiting.isEmpty() && inFlight == 0) {
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
    state = s;
    error = why;
    endedAtMs = now();
    pending.clear();
    waiting.clear();
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
    dirty = true;
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
    causes.merge(cause, 1L, Long::sum);
  }

  private void log(String line) {
    logs.addLast(java.time.Instant.ofEpochMilli(now()) + " " + line);
    while (logs.size() > JobStatus.MAX_LOGS) {
      logs.removeFirst();
    }
    dirty = true;
  }

  private long now() {
    return env.clockMillis().getAsLong();
  }

  JobStatus snapshot() {
    synchronized (this) {
      long t = now();
      double secs = Math.max(0.001, ((endedAtMs > 0 ? endedAtMs : t) - startedAtMs) / 1000.0);
      double rate = startedAtMs == 0 ? 0 : doneHere / secs;
      int left = spec.inputs().size() - done - failed;
      long eta = state.terminal() ? 0 : rate > 0 ? (long) Math.ceil(left / rate) : -1;
      return new JobStatus(id, spec.name(), spec.target(), state, env.runtime().nodeId(), spec.output(),
          spec.inputs().size(), done, skipped, failed, inFlight, createdAtMs, startedAtMs, t, endedAtMs, rate, eta,
          causes, byNode, error, List.copyOf(logs));
    }
  }

  private void persistIfDirty() {
    synchronized (this) {
      if (!dirty) {
        return;
      }
    }
    persist();
  }

  /** Stores the current status after the previous write, so writes land in order. */
  private CompletionStage<Void> persist() {
    CompletableFuture<Void> next;
    synchronized (this) {
      dirty = false;
      JobStatus s = snapshot();
      next = lastWrite.thenCompose(v -> env.store().put(s)).exceptionally(e -> {
        LOG.debug("storing job {} failed", id, e);
        return null;
      });
      lastWrite = next;
    }
    return next;
  }
}
