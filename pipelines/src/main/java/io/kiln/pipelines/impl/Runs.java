package io.kiln.pipelines.impl;

import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.PipelineException;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.RunRequest;
import java.util.ArrayList;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/** The runs one node coordinates: starts them, routes remote step events to them, abandons them on close. */
public final class Runs {

  private final RunEnv env;
  private final int maxActive;
  private final ConcurrentHashMap<String, RunCoordinator> active = new ConcurrentHashMap<>();

  public Runs(RunEnv env, int maxActive) {
    this.env = new RunEnv(env.runtime(), env.store(), env.events(), env.resolver(), env.webhooks(),
        env.clockMillis(), id -> {
          active.remove(id);
          env.finished().accept(id);
        });
    this.maxActive = maxActive;
  }

  /** Starts a run of {@code spec}; completes with its id once its first status is stored. */
  public CompletionStage<String> start(PipelineSpec spec, RunRequest request) {
    PipelineSpec filled;
    try {
      filled = SpecFill.fill(spec, request.input());
      if (!request.webhook().isEmpty() && !request.webhook().startsWith("http://")
          && !request.webhook().startsWith("https://")) {
        throw new IllegalArgumentException("webhook must be an http:// or https:// URL");
      }
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(new PipelineException(PipelineException.Kind.INVALID_INPUT,
          "cannot start pipeline '" + spec.name() + "': " + e.getMessage()));
    }
    if (active.size() >= maxActive) {
      return CompletableFuture.failedFuture(new PipelineException(PipelineException.Kind.OVERLOADED, "node "
          + env.runtime().nodeId() + " already coordinates " + active.size() + " runs; try again later or elsewhere"));
    }
    String runId = spec.name() + "-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    RunCoordinator c = new RunCoordinator(env, filled, runId, request.input(), request.webhook());
    active.put(runId, c);
    return c.start().thenApply(v -> runId);
  }

  /** A step's own event from its node, for the run's coordinator if it is here. */
  public void remoteEvent(PipelineEvent e) {
    if (e.seq() != 0) {
      return; // coordinators' own events
    }
    RunCoordinator c = active.get(e.runId());
    if (c != null) {
      c.remoteEvent(e);
    }
  }

  public boolean coordinates(String runId) {
    return active.containsKey(runId);
  }

  public int active() {
    return active.size();
  }

  public void abandonAll(String why) {
    for (RunCoordinator c : new ArrayList<>(active.values())) {
      c.abandon(why);
    }
  }
}
