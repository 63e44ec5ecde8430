package io.kiln.runtime.impl;

import io.vertx.core.eventbus.Message;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A call in an actor's mailbox or in progress, with how often it was re-sent after the actor died. The
 * mailbox holds one kind of entry whichever way the call came: from another node (or through the event bus)
 * it answers its {@link Message}; from this node's fast path it answers a {@link LocalReply}, which is also
 * the call's deadline, watched where its caller waits (event-bus requests keep their own timer).
 */
final class Invocation {
  final CallMessage call;
  private final Message<CallMessage> message;
  private final LocalReply local;
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
  }

  /** A call from this node, handed over by reference. */
  Invocation(CallMessage call, LocalReply local) {
    this.call = call;
    this.message = null;
    this.local = local;
  }

  int token() {
    return token.get();
  }

  boolean answered() {
    return token.get() == DONE;
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

  /** Takes the call back from whoever runs it, for re-queuing; false if it was answered meanwhile. */
  boolean revoke() {
    int t = token.get();
    return t != DONE && token.compareAndSet(t, t + 1);
  }
}
