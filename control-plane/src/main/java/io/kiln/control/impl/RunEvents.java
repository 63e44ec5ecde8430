package io.kiln.control.impl;

import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.RunStatus;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.WireCodec;
import io.vertx.core.Context;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.List;

/**
 * One Server-Sent Events stream of a run: subscribes to the cluster's run events first, then replays the
 * events recorded in the run's status (after {@code Last-Event-ID}), then forwards live ones until the run
 * ends or the client goes. Events a step publishes from its node carry no id. A comment line every
 * {@value #HEARTBEAT_MS} ms keeps proxies from closing an idle stream. Runs on the request's event loop.
 */
public final class RunEvents {

  static final long HEARTBEAT_MS = 15_000;

  private final KilnRuntime runtime;
  private final Pipelines pipelines;
  private final RoutingContext ctx;
  private final String runId;
  private final List<PipelineEvent> early = new ArrayList<>();
  private MessageConsumer<Object> consumer;
  private boolean replayed;
  private boolean closed;
  private long lastSeq;
  private long heartbeat = -1;

  public RunEvents(KilnRuntime runtime, Pipelines pipelines, RoutingContext ctx) {
    this.runtime = runtime;
    this.pipelines = pipelines;
    this.ctx = ctx;
    this.runId = ctx.pathParam("id");
  }

  /** Subscribes, replays the recorded events, then forwards live ones; 404 for an unknown run, 500 if unreadable. */
  public void start() {
    String last = ctx.request().getHeader("Last-Event-ID");
    try {
      lastSeq = last == null ? 0 : Long.parseLong(last.trim());
    } catch (NumberFormatException e) {
      lastSeq = 0;
    }
    consumer = runtime.vertx().eventBus().consumer(PipelineEvent.ADDRESS, m -> {
      PipelineEvent e = PipelineEvent.fromMessage(m.body());
      if (e.runId().equals(runId)) {
        live(e);
      }
    });
    // The response's close handler, not the connection's: the gateway's read deadlines own that one.
    ctx.response().closeHandler(v -> close());
    Context context = runtime.vertx().getOrCreateContext(); // the request's: replay and live events stay serial
    consumer.completion().onComplete(ar -> pipelines.run(runId).whenComplete((s, err) ->
        context.runOnContext(v -> replay(s == null ? null : s.orElse(null), err))));
  }

  private void replay(RunStatus s, Throwable err) {
    if (err != null || s == null || !s.pipeline().equals(ctx.pathParam("name"))) {
      close();
      Answers.error(ctx, err != null ? 500 : 404, err != null ? "reading run " + runId + " failed: " + err
          : "no run " + runId + " of pipeline '" + ctx.pathParam("name") + "'");
      return;
    }
    ctx.response().setChunked(true).putHeader(HttpHeaders.CONTENT_TYPE, "text/event-stream")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache");
    ctx.response().write(":run " + runId + "\n\n");
    for (PipelineEvent e : s.events()) {
      write(e);
    }
    replayed = true;
    for (PipelineEvent e : early) {
      live(e);
    }
    early.clear();
    if (s.state().terminal()) {
      end();
      return;
    }
    heartbeat = runtime.vertx().setPeriodic(HEARTBEAT_MS, id -> {
      if (!closed) {
        ctx.response().write(":\n\n");
      }
    });
  }

  private void live(PipelineEvent e) {
    if (closed) {
      return;
    }
    if (!replayed) {
      early.add(e);
      return;
    }
    write(e);
    if (e.terminal()) {
      end();
    }
  }

  private void write(PipelineEvent e) {
    if (e.seq() != 0 && e.seq() <= lastSeq) {
      return;
    }
    lastSeq = Math.max(lastSeq, e.seq());
    // A step's own event (seq 0) carries no id, so it never moves a client's resume point.
    ctx.response().write((e.seq() == 0 ? "" : "id: " + e.seq() + "\n") + "event: " + e.type() + "\ndata: "
        + WireCodec.toJson(e) + "\n\n");
  }

  private void end() {
    close();
    if (!ctx.response().ended()) {
      ctx.response().end();
    }
  }

  private void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (consumer != null) {
      consumer.unregister();
    }
    if (heartbeat >= 0) {
      runtime.vertx().cancelTimer(heartbeat);
    }
  }
}
