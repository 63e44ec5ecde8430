package io.kiln.pipelines.impl;

import io.kiln.runtime.WireCodec;
import io.kiln.pipelines.PipelineEvent;
import io.vertx.core.Vertx;

/** Publishes run events cluster-wide on {@link PipelineEvent#ADDRESS}, as JSON text. Thread-safe. */
public final class EventSink {

  private final Vertx vertx;

  public EventSink(Vertx vertx) {
    this.vertx = vertx;
  }

  public void publish(PipelineEvent event) {
    vertx.eventBus().publish(PipelineEvent.ADDRESS, WireCodec.toJson(event));
  }

  public static PipelineEvent decode(Object body) {
    return PipelineEvent.fromMessage(body);
  }
}
