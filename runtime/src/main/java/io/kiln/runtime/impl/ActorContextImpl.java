package io.kiln.runtime.impl;

import io.kiln.runtime.ActorContext;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.Allocation;
import io.kiln.runtime.KilnRuntime;
import io.vertx.core.Context;

/** The {@link ActorContext} of one actor cell; restart count read live from the cell. */
final class ActorContextImpl implements ActorContext {

  private final ActorCell cell;

  ActorContextImpl(ActorCell cell) {
    this.cell = cell;
  }

  @Override
  public String actorId() {
    return cell.actorId;
  }

  @Override
  public String name() {
    return cell.options.name();
  }

  @Override
  public String namespace() {
    return cell.options.namespace();
  }

  @Override
  public String nodeId() {
    return cell.agent.nodeId();
  }

  @Override
  public Allocation allocation() {
    return cell.allocation;
  }

  @Override
  public int restartCount() {
    return cell.restarts();
  }

  @Override
  public KilnRuntime runtime() {
    return cell.agent.runtime();
  }

  @Override
  public Context vertxContext() {
    return cell.context();
  }

  @Override
  public <T> ActorHandle<T> self(Class<T> type) {
    return cell.agent.callPath().handle(cell.actorId, cell.options.namespace(), cell.options.name(),
        cell.agent.nodeId(), type);
  }
}
