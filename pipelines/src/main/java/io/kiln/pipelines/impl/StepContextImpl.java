package io.kiln.pipelines.impl;

import io.kiln.runtime.KilnRuntime;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepContext;
import io.kiln.pipelines.StepResult;
import java.util.Map;
import java.util.Optional;

/** The context of one step attempt on its node. */
final class StepContextImpl implements StepContext {

  private final StepInvocation inv;
  private final NodeServices services;
  private final KilnRuntime runtime;

  StepContextImpl(StepInvocation inv, NodeServices services, KilnRuntime runtime) {
    this.inv = inv;
    this.services = services;
    this.runtime = runtime;
  }

  @Override
  public String runId() {
    return inv.runId();
  }

  @Override
  public String pipeline() {
    return inv.pipeline();
  }

  @Override
  public String step() {
    return inv.step();
  }

  @Override
  public int attempt() {
    return inv.attempt();
  }

  @Override
  public String nodeId() {
    return services.nodeId();
  }

  @Override
  public Map<String, String> input() {
    return inv.input();
  }

  @Override
  public Map<String, String> params() {
    return inv.action() instanceof StepAction.Custom c ? c.params() : Map.of();
  }

  @Override
  public Optional<StepResult> result(String step) {
    return Optional.ofNullable(inv.results().get(step));
  }

  @Override
  public NodeCache cache() {
    return services.cache();
  }

  @Override
  public KilnRuntime runtime() {
    return runtime;
  }

  @Override
  public void progress(String message) {
    String m = message == null ? "" : message.length() > 1000 ? message.substring(0, 1000) + "..." : message;
    services.events().publish(new PipelineEvent(inv.runId(), inv.pipeline(), 0, "step_progress", inv.step(),
        services.nodeId(), inv.attempt(), services.clockMillis().getAsLong(), m));
  }
}
