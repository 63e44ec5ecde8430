package io.kiln.pools.impl;

import io.kiln.pools.Cancellation;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ResponseStream;
import io.kiln.runtime.Futures;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * The receiving end of one stream (see {@link ResponseStream}): puts the worker's messages in order, hands them
 * to the listener on the opening context, grants credit as chunks are consumed, and settles the stream once: on
 * the worker's END or ERROR, or on the pool call's failure (worker or node died, refused, deadline), or, when the
 * call succeeded but END never came, after {@value #END_GRACE_MS} ms; or, without a word to the listener, when its
 * request's token is cancelled (it then tells the worker to stop and withdraws the pool call).
 *
 * <p>State is confined to {@code context}; {@link #receive} and {@link #callDone} may be called from any thread.
 */
public final class InboundStream implements ResponseStream {

  static final long END_GRACE_MS = 10_000;

  private final StreamHub hub;
  private final String id;
  private final String poolNode;
  private final int window;
  private final Context context;
  private final ChunkListener listener;
  private final String requestId;
  private final String deployment;
  private final String version;
  private final TreeMap<Long, StreamMessage> early = new TreeMap<>();
  /** Withdraws the pool call carrying the request, once its token was cancelled. */
  private Runnable withdrawCall = () -> { };
  private long expected;
  private int unacked;
  private int heldWhilePaused;
  private boolean paused;
  private boolean done;

  public InboundStream(StreamHub hub, String id, String poolNode, int window, Context context, ChunkListener listener,
                       String requestId, String deployment, String version) {
    this.hub = hub;
    this.id = id;
    this.poolNode = poolNode;
    this.window = window;
    this.context = context;
    this.listener = listener;
    this.requestId = requestId;
    this.deployment = deployment;
    this.version = version;
    hub.addInbound(this);
  }

  @Override
  public String id() {
    return id;
  }

  /**
   * The pool call carrying the request, how to withdraw that call, and the request's token, whose cancellation
   * withdraws the stream (see {@link ResponseStream}); the call's outcome settles a stream END missed.
   */
  public void watch(CompletableFuture<?> poolCall, Runnable withdraw, Cancellation token) {
    this.withdrawCall = withdraw;
    poolCall.whenComplete((r, e) -> context.runOnContext(v -> callDone(e)));
    if (token.cancellable()) {
      token.onCancel(this::cancelled);
    }
  }

  // The stream's state is its context's: a token cancelled there (a listener's callback) withdraws it at once, so
  // that the listener hears nothing more; from elsewhere the withdrawal hops there.
  private void cancelled() {
    if (Vertx.currentContext() == context) {
      withdraw();
    } else {
      context.runOnContext(v -> withdraw());
    }
  }

  void receive(StreamMessage m) {
    context.runOnContext(v -> deliver(m));
  }

  private void deliver(StreamMessage m) {
    if (done) {
      return;
    }
    if (m.seq() != expected) {
      if (m.seq() < expected || early.size() > window + 1) {
        fail(new InferenceException(InferenceException.Kind.INTERNAL, "stream " + id + " lost its order: got message "
            + m.seq() + " while expecting " + expected));
        return;
      }
      early.put(m.seq(), m);
      return;
    }
    handle(m);
    for (StreamMessage next = early.remove(expected); next != null && !done; next = early.remove(expected)) {
      handle(next);
    }
  }

  private void handle(StreamMessage m) {
    switch (m.type()) {
      case StreamMessage.CHUNK -> {
        expected++;
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("kiln_node", poolNode);
        params.put("kiln_chunk", m.seq());
        listener.chunk(new InferenceResponse(requestId, deployment, version, m.outputs(), params));
        if (paused) {
          heldWhilePaused++;
        } else {
          unacked++;
          grant(false);
        }
      }
      case StreamMessage.END -> {
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("kiln_node", poolNode);
        params.put("kiln_chunks", m.seq());
        settle();
        listener.end(params);
      }
      case StreamMessage.ERROR -> {
        settle();
        listener.error(m.failure());
      }
      default -> { } // a newer Kiln's message type: ignore
    }
  }

  // Credit goes back in halves of the window: one message per several chunks, and the worker never starves.
  private void grant(boolean now) {
    if (unacked > 0 && (now || unacked >= Math.max(1, window / 2))) {
      hub.send(StreamHub.CTL + poolNode, StreamMessage.credit(id, unacked));
      unacked = 0;
    }
  }

  @Override
  public void pause() {
    paused = true;
  }

  @Override
  public void resume() {
    if (paused) {
      paused = false;
      unacked += heldWhilePaused;
      heldWhilePaused = 0;
      grant(true);
    }
  }

  private void withdraw() {
    if (done) {
      return;
    }
    settle();
    hub.send(StreamHub.CTL + poolNode, StreamMessage.cancel(id));
    withdrawCall.run();
  }

  private void callDone(Throwable error) {
    if (done) {
      return;
    }
    if (error != null) {
      // The worker may still run (e.g. the pool's deadline passed under it): tell it to stop.
      hub.send(StreamHub.CTL + poolNode, StreamMessage.cancel(id));
      Throwable t = Futures.unwrapCompletion(error);
      fail(t instanceof InferenceException ? t : new InferenceException(InferenceException.Kind.INTERNAL,
          "stream " + id + " failed: " + t, t));
    } else {
      hub.vertx().setTimer(END_GRACE_MS, t -> context.runOnContext(v -> {
        if (!done) {
          fail(new InferenceException(InferenceException.Kind.UNAVAILABLE, "stream " + id + " ended at the pool"
              + " but its last messages never arrived (after " + expected + " chunks)"));
        }
      }));
    }
  }

  private void fail(Throwable t) {
    settle();
    listener.error(t);
  }

  private void settle() {
    done = true;
    early.clear();
    hub.removeInbound(id);
  }
}
