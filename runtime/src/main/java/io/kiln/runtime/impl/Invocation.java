package io.kiln.runtime.impl;

import io.vertx.core.eventbus.Message;
import java.util.concurrent.atomic.AtomicInteger;

/** A call in an actor's mailbox or in progress, with how often it was re-sent after the actor died. */
final class Invocation {
  final Message<CallMessage> message;
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

  Invocation(Message<CallMessage> message) {
    this.message = message;
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
      message.reply(reply);
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
