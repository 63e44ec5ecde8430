package io.kiln.pipelines.impl;

import io.kiln.runtime.Futures;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.TaskOptions;
import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.OnNodeLoss;
import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.RunState;
import io.kiln.pipelines.RunStatus;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.pipelines.StepResult;
import io.kiln.pipelines.StepSpec;
import io.kiln.pipelines.StepState;
import io.kiln.pipelines.StepStatus;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives one run on the node that accepted it: submits each step as a runtime task placed by its
 * strategy, records every transition in the cluster (so any node can show the run) and publishes it as an
 * event, retries failed attempts, and decides what a node loss means.
 *
 * <p>Node loss: a step pinned with {@code same_node_as} whose node left cannot run anywhere else (its input
 * was on that disk). With {@link OnNodeLoss#FAIL} the run fails, naming the node; with
 * {@link OnNodeLoss#RERUN} the chain re-runs from the step that chose the node, up to {@code max_reruns}.
 * An unpinned step whose node died while it ran is submitted again without counting as a retry.
 *
 * <p>Threading: state is guarded by this object's monitor; task completions, timers and remote events
 * arrive on any thread. Nothing blocks.
 */
final class RunCoordinator {

  private static final Logger LOG = LoggerFactory.getLogger(RunCoordinator.class);
  /** Node deaths an unpinned step may outlive per pass before they count as failures. */
  private static final RetryPolicy RESUBMIT = RetryPolicy.STEP_RESUBMIT;

  private final RunEnv env;
  private final PipelineSpec spec;
  private final String runId;
  private final Map<String, String> input;
  private final String webhook;
  private final long createdAt;
  private final long deadline;
  private final StepStatus[] steps;
  private final int[] freeResubmits;
  private final Map<String, StepResult> results = new LinkedHashMap<>();
  private final ArrayDeque<PipelineEvent> events = new ArrayDeque<>();
  private long seq;
  private int reruns;
  private RunState state = RunState.RUNNING;
  private String error = "";
  private long endedAt;
  private int token;
  private long timer = -1;
  private CompletableFuture<Void> lastWrite = CompletableFuture.completedFuture(null);
  private final CompletableFuture<RunStatus> done = new CompletableFuture<>();

  /** @param spec the pipeline with the run's input filled into its placeholders */
  RunCoordinator(RunEnv env, PipelineSpec spec, String runId, Map<String, String> input, String webhook) {
    this.env = env;
    this.spec = spec;
    this.runId = runId;
    this.input = Map.copyOf(input);
    this.webhook = webhook;
    this.createdAt = env.clockMillis().getAsLong();
    this.deadline = createdAt + spec.timeoutMs();
    this.steps = spec.steps().stream().map(StepStatus::pending).toArray(StepStatus[]::new);
    this.freeResubmits = new int[steps.length];
  }

  String runId() {
    return runId;
  }

  /** Completes with the final status once the run ended (its webhook may still be on its way). */
  CompletionStage<RunStatus> done() {
    return done;
  }

  /**
   * Records the run and submits its first step; completes once the first record is stored. If that write fails (split-
   * brain protection refused it: this node is on the smaller side of a partition), the run never starts, nothing of it
   * is published, and the returned stage fails with the write's error.
   */
  CompletionStage<Void> start() {
    CompletableFuture<Void> stored;
    PipelineEvent started;
    synchronized (this) {
      started = new PipelineEvent(runId, spec.name(), ++seq, "run_started", "", "", 0, env.clockMillis().getAsLong(),
          "coordinated by node " + env.runtime().nodeId());
      record(started);
      stored = env.store().put(snapshot()).toCompletableFuture();
      lastWrite = stored.exceptionally(e -> null);
      timer = env.runtime().vertx().setTimer(Math.max(1, spec.timeoutMs()), id -> timedOut());
    }
    return stored.whenComplete((v, e) -> {
      if (e != null) {
        notStarted();
      } else {
        env.events().publish(started);
      }
    }).thenRun(() -> submit(0, 0));
  }

  /** The first record was refused: the run ends here, unrecorded and unannounced, and frees its slot. */
  private void notStarted() {
    synchronized (this) {
      state = RunState.FAILED;
      token++;
      if (timer >= 0) {
        env.runtime().vertx().cancelTimer(timer);
      }
    }
    env.finished().accept(runId);
  }

  // ---- steps ----------------------------------------------------------------------------------------

  private void submit(int i, int expectedToken) {
    StepInvocation inv;
    TaskOptions options;
    int myToken;
    synchronized (this) {
      if (state.terminal() || expectedToken != token) {
        return;
      }
      StepSpec s = spec.steps().get(i);
      StepStatus prev = steps[i];
      int attempt = prev.attempts() + 1;
      long now = env.clockMillis().getAsLong();
      String pinned = pinnedNode(i);
      InferTarget target = null;
      String problem = null;
      try {
        options = Placements.options(s, this::nodeOf, Duration.ofMillis(deadline - now));
        if (s.action() instanceof StepAction.Infer infer) {
          // A graph's target is its inputs; the versions of its steps' deployments are chosen per request.
          target = infer.graph() ? env.runtime().localService(io.kiln.pipelines.graphs.Graphs.class)
              .flatMap(g -> g.target(infer.deployment())).orElse(null)
              : env.resolver().resolve(infer.deployment()).orElse(null);
          if (target == null) {
            problem = infer.graph() ? "no graph named '" + infer.deployment() + "' (apply it with its deployments)"
                : "deployment '" + infer.deployment() + "' has no version ready to serve";
          }
        } else if (s.action() instanceof StepAction.Generate gen) {
          target = env.resolver().resolve(gen.deployment()).orElse(null);
          if (target == null) {
            problem = "deployment '" + gen.deployment() + "' has no version ready to serve";
          }
        }
      } catch (IllegalStateException e) {
        options = null;
        problem = e.getMessage();
      }
      steps[i] = new StepStatus(s.name(), s.kind(), StepState.WAITING, pinned == null ? "" : pinned, attempt, now,
          0, 0, prev.error(), Map.of());
      myToken = ++token;
      if (problem != null) {
        String why = problem;
        env.runtime().vertx().runOnContext(v -> finished(i, myToken, null, new StepFailedException(why)));
        return;
      }
      event("step_queued", s.name(), pinned == null ? "" : pinned, attempt, "strategy " + s.placement()
          + (options.resources().isZero() ? "" : ", resources " + options.resources()));
      persist();
      inv = new StepInvocation(runId, spec.name(), s.name(), attempt, s.action(), input,
          java.util.Collections.unmodifiableMap(new LinkedHashMap<>(results)), target,
          s.timeoutMs());
    }
    env.runtime().task(StepTasks::run, inv).options(options).remote()
        .whenComplete((out, err) -> finished(i, myToken, out, err));
  }

  private void finished(int i, int myToken, StepOutcome out, Throwable err) {
    synchronized (this) {
      if (myToken != token || state.terminal()) {
        return; // a superseded attempt (timed out, or the chain re-ran)
      }
      StepSpec s = spec.steps().get(i);
      StepStatus st = steps[i];
      long now = env.clockMillis().getAsLong();
      if (err == null) {
        steps[i] = new StepStatus(s.name(), s.kind(), StepState.SUCCEEDED, out.nodeId(), st.attempts(), st.queuedAtMs(),
            out.startedAtMs(), out.endedAtMs(), "", out.output());
        results.put(s.name(), new StepResult(s.name(), out.nodeId(), out.output(), out.startedAtMs(),
            out.endedAtMs()));
        event("step_succeeded", s.name(), out.nodeId(), st.attempts(), "took " + (out.endedAtMs() - out.startedAtMs())
            + " ms");
        if (i + 1 < steps.length) {
          persist();
          int t = token;
          env.runtime().vertx().runOnContext(v -> submit(i + 1, t));
        } else {
          end(RunState.SUCCEEDED, "");
        }
        return;
      }
      Throwable cause = Futures.unwrapCompletion(err);
      String message = describe(cause);
      String pinned = pinnedNode(i);
      boolean pinnedNodeGone = pinned != null && !env.runtime().members().contains(pinned);
      String ranOn = st.nodeId();
      steps[i] = new StepStatus(s.name(), s.kind(), StepState.FAILED, ranOn, st.attempts(), st.queuedAtMs(),
          st.startedAtMs(), now, message, Map.of());
      event("step_failed", s.name(), ranOn, st.attempts(), message);
      if (pinnedNodeGone) {
        nodeLost(i, pinned);
        return;
      }
      boolean nodeDied = cause instanceof NodeDiedException
          || (!ranOn.isEmpty() && !env.runtime().members().contains(ranOn));
      if (nodeDied && RESUBMIT.allows(freeResubmits[i] + 1)) {
        freeResubmits[i]++;
        // The attempt never finished: it does not count against the step's retries.
        steps[i] = withAttempts(steps[i], st.attempts() - 1);
        event("step_retry", s.name(), ranOn, st.attempts(), "its node left the cluster; submitting it again ("
            + RESUBMIT.name() + " " + freeResubmits[i] + " of " + RESUBMIT.maxRetries() + ")");
        persist();
        int t = token;
        env.runtime().vertx().runOnContext(v -> submit(i, t));
        return;
      }
      RetryPolicy retry = RetryPolicy.STEP_RETRY.withMaxRetries(s.retries());
      if (retry.allows(st.attempts())) {
        long backoff = retry.delayMillis(st.attempts());
        event("step_retry", s.name(), ranOn, st.attempts(), "retry " + st.attempts() + " of " + s.retries()
            + " in " + backoff + " ms (" + retry.name() + ")");
        persist();
        int t = token;
        env.runtime().vertx().setTimer(backoff, id -> submit(i, t));
        return;
      }
      end(RunState.FAILED, "step '" + s.name() + "' failed after " + st.attempts() + " attempt(s)"
          + (ranOn.isEmpty() ? "" : " (last on node " + ranOn + ")") + ": " + message);
    }
  }

  /** A pinned step cannot run: its node, chosen by an earlier step, left the cluster. Holds the monitor. */
  private void nodeLost(int i, String node) {
    int anchor = spec.anchorOf(i);
    String anchorName = spec.steps().get(anchor).name();
    String stepName = spec.steps().get(i).name();
    String what = "step '" + stepName + "' must run on node " + node + ", where step '" + anchorName
        + "' ran, but node " + node + " left the cluster";
    event("node_lost", stepName, node, steps[i].attempts(), what);
    if (spec.onNodeLoss() == OnNodeLoss.RERUN && reruns < spec.maxReruns()) {
      reruns++;
      for (int k = anchor; k < steps.length; k++) {
        steps[k] = StepStatus.pending(spec.steps().get(k));
        freeResubmits[k] = 0;
        results.remove(spec.steps().get(k).name());
      }
      event("rerun", anchorName, node, 0, "re-running from step '" + anchorName + "' (rerun " + reruns + " of "
          + spec.maxReruns() + ")");
      persist();
      int t = ++token;
      env.runtime().vertx().runOnContext(v -> submit(anchor, t));
      return;
    }
    end(RunState.FAILED, what + (spec.onNodeLoss() == OnNodeLoss.FAIL ? " (on_node_loss: fail)"
        : " and the run has no reruns left (max_reruns: " + spec.maxReruns() + ")"));
  }

  /** Remote events: a step reports that it started on its node, or its progress. */
  void remoteEvent(PipelineEvent e) {
    synchronized (this) {
      if (state.terminal()) {
        return;
      }
      int i = spec.indexOf(e.step());
      if (i < 0 || steps[i].attempts() != e.attempt()) {
        return;
      }
      if (e.type().equals("step_started") && steps[i].state() == StepState.WAITING) {
        StepStatus st = steps[i];
        steps[i] = new StepStatus(st.name(), st.kind(), StepState.RUNNING, e.nodeId(), st.attempts(), st.queuedAtMs(),
            e.atMs(), 0, st.error(), Map.of());
      } else if (!e.type().equals("step_progress")) {
        return;
      }
      record(new PipelineEvent(runId, spec.name(), ++seq, e.type(), e.step(), e.nodeId(), e.attempt(), e.atMs(),
          e.message()));
      persist();
    }
  }

  private void timedOut() {
    synchronized (this) {
      if (!state.terminal()) {
        String at = "";
        for (StepStatus s : steps) {
          if (s.state() == StepState.WAITING || s.state() == StepState.RUNNING) {
            at = " (step '" + s.name() + "' was " + s.state().name().toLowerCase(java.util.Locale.ROOT)
                + (s.nodeId().isEmpty() ? "" : " on node " + s.nodeId()) + ")";
          }
        }
        end(RunState.FAILED, "the run did not finish within its timeout of " + spec.timeoutMs() + " ms" + at);
      }
    }
  }

  /** Ends the run now (the coordinating node is shutting down). */
  void abandon(String why) {
    synchronized (this) {
      if (!state.terminal()) {
        end(RunState.FAILED, why);
      }
    }
  }

  /** Holds the monitor. */
  private void end(RunState finalState, String why) {
    state = finalState;
    error = why;
    endedAt = env.clockMillis().getAsLong();
    token++;
    for (int k = 0; k < steps.length; k++) {
      StepStatus s = steps[k];
      if (s.state() == StepState.PENDING || s.state() == StepState.WAITING || s.state() == StepState.RUNNING) {
        steps[k] = new StepStatus(s.name(), s.kind(), s.state() == StepState.PENDING ? StepState.SKIPPED
            : StepState.FAILED, s.nodeId(), s.attempts(), s.queuedAtMs(), s.startedAtMs(), endedAt,
            s.state() == StepState.PENDING ? "" : why, Map.of());
      }
    }
    if (timer >= 0) {
      env.runtime().vertx().cancelTimer(timer);
    }
    event(finalState == RunState.SUCCEEDED ? "run_succeeded" : "run_failed", "", "", 0, why);
    if (finalState == RunState.FAILED) {
      LOG.info("pipeline run {} of {} failed: {}", runId, spec.name(), why);
    }
    RunStatus last = snapshot();
    CompletionStage<Void> stored = persist();
    env.finished().accept(runId);
    stored.whenComplete((v, e) -> {
      done.complete(last);
      callWebhook(last);
    });
  }

  private void callWebhook(RunStatus last) {
    String url = !webhook.isEmpty() ? webhook : spec.webhook();
    if (url.isEmpty()) {
      return;
    }
    RunStatus body = last.ended(last.state(), last.error(), last.endedAtMs(), last.steps(), List.of());
    env.webhooks().postAsync(url, RunStore.encode(body), Duration.ofSeconds(10)).whenComplete((status, e) -> {
      synchronized (this) {
        event(e == null ? "webhook_sent" : "webhook_failed", "", "", 0, e == null ? "POST " + url + ": HTTP " + status
            : describe(Futures.unwrapCompletion(e)));
        persist();
      }
    });
  }

  // ---- helpers (hold the monitor) -------------------------------------------------------------------

  private String nodeOf(String step) {
    int k = spec.indexOf(step);
    return k < 0 ? null : steps[k].nodeId();
  }

  /** The node step {@code i} is pinned to, or null if it is not pinned. */
  private String pinnedNode(int i) {
    StepPlacement p = spec.steps().get(i).placement();
    return p.kind() == StepPlacement.Kind.SAME_NODE_AS ? nodeOf(p.target()) : null;
  }

  private static StepStatus withAttempts(StepStatus s, int attempts) {
    return new StepStatus(s.name(), s.kind(), s.state(), s.nodeId(), attempts, s.queuedAtMs(), s.startedAtMs(),
        s.endedAtMs(), s.error(), s.output());
  }

  private void event(String type, String step, String node, int attempt, String message) {
    PipelineEvent e = new PipelineEvent(runId, spec.name(), ++seq, type, step, node, attempt,
        env.clockMillis().getAsLong(), message);
    record(e);
    env.events().publish(e);
  }

  private void record(PipelineEvent e) {
    events.addLast(e);
    while (events.size() > RunStatus.MAX_EVENTS) {
      events.removeFirst();
    }
  }

  RunStatus snapshot() {
    synchronized (this) {
      return new RunStatus(runId, spec.name(), state, env.runtime().nodeId(), input, List.of(steps), reruns, createdAt,
          endedAt, error, !webhook.isEmpty() ? webhook : spec.webhook(), List.copyOf(events));
    }
  }

  /** Stores the current status after the previous write, so writes land in order. */
  private CompletionStage<Void> persist() {
    RunStatus s = snapshot();
    CompletableFuture<Void> next = lastWrite.thenCompose(v -> env.store().put(s)).exceptionally(e -> {
      LOG.debug("storing run {} failed", runId, e);
      return null;
    });
    lastWrite = next;
    return next;
  }

  static String describe(Throwable t) {
    String m = t.getMessage();
    if (t instanceof StepFailedException || t instanceof io.kiln.runtime.KilnException) {
      return m;
    }
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + m;
  }
}
