package io.kiln.runtime.impl;

import io.vertx.core.eventbus.Message;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A call in an actor's mailbox or in progress, with how often it was re-sent after the actor died. The
 * mailbox holds one kind of entry whichever way the call came: from another node (or through the event bus)
 * it answers its {@link Message}; from this node's fast path it answers a {@link LocalReply}, which also
 * carries the call's deadline (event-bus requests keep their own timer).
 */
final class Invocation {
  final CallMessage call;
  private final Message<CallMessage> message;
  private final LocalReply local;
  /** When a local call's caller stops waiting ({@code nanoClock} time); {@link Long#MAX_VALUE} if not tracked. */
  long deadline;
  int retries;
  /** Set by the thread that runs it: a call that never started is re-queued without using a retry. */
  volatile boolean started;
  /**
   * Which hand-off may answer: a worker thread answers with the token it was given, and re-queuing the
   * call after the actor broke moves the token on, so a late answer from the broken incarnation is
   * dropped rather than racing the retry. {@link #DONE} once answered.
   */
  private final AtomicInteger token = new AtomicInteger();
  static final int DONE = -1;

  /** A call that came through the event bus. */
  Invocation(Message<CallMessage> message) {
    this.call = message.body();
    this.message = message;
    this.local = null;
    this.deadline = Long.MAX_VALUE;
  }

  /** A call from this node, handed over by reference; its caller stops waiting at {@code deadline}. */
  Invocation(CallMessage call, LocalReply local, long deadline) {
    this.call = call;
    this.message = null;
    this.local = local;
    this.deadline = deadline;
  }

  int token() {
    return token.get();
  }

  boolean answered() {
    return token.get() == DONE;
  }

  /** Whether its caller is on this node (and so its deadline is the cell's to enforce). */
  boolean isLocal() {
    return local != null;
  }

  /** Answers if {@code expected} is still the live token. */
  boolean replyAs(int expected, ReplyMessage reply) {
    if (expected != DONE && token.compareAndSet(expected, DONE)) {
      if (message != null) {
        message.reply(reply);
      } else {
        local.complete(reply);
      }
      return true;
    }
    return false;
  }

  /** Answers unless already answered (event-loop paths, which hold the live token). */
  void reply(ReplyMessage reply) {
    replyAs(token.get(), reply);
  }

  /**
   * A local call's caller stops waiting, as an event-bus request's timer would make it: the call itself
   * stays where it is (queued or running) and its eventual answer goes nowhere.
   */
  void expire() {
    deadline = Long.MAX_VALUE;
    local.expire();
  }

  /** Takes the call back from whoever runs it, for re-queuing; false if it was answered meanwhile. */
  boolean revoke() {
    int t = token.get();
    return t != DONE && token.compareAndSet(t, t + 1);
  }
}
