package io.kiln.runtime.impl;

import io.kiln.runtime.Futures;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * One hand-off of a serial WORKER actor's waiting calls to its thread: the thread runs them in order and
 * answers each itself, returning to the event loop once per batch instead of twice per call.
 */
final class SerialBatch {

  /** Calls per hand-off. */
  static final int MAX = 64;

  /**
   * How a run ended: {@code stoppedAt} is the index of the call it stopped on (batch size when all were
   * answered); {@code outcome} is that call's fatal error or pending future, null if it never started.
   */
  record End(int stoppedAt, Outcome outcome) {
  }

  private SerialBatch() {
  }

  /**
   * Runs {@code batch} on the calling (worker) thread until a call returns a future or a fatal error, or
   * {@code stop} says the incarnation is gone; answers each call with the token it was handed with.
   */
  static End run(List<Invocation> batch, int[] tokens, BooleanSupplier stop, Function<Invocation, Outcome> invoke) {
    for (int i = 0; i < batch.size(); i++) {
      if (stop.getAsBoolean()) {
        return new End(i, null);
      }
      Invocation inv = batch.get(i);
      inv.started = true;
      Outcome outcome = invoke.apply(inv);
      if (outcome.error() == null && outcome.value() instanceof CompletionStage<?>) {
        return new End(i, outcome);
      }
      Throwable error = outcome.error() == null ? null : Futures.unwrap(outcome.error());
      if (error instanceof Error) {
        return new End(i, outcome);
      }
      inv.replyAs(tokens[i], error != null ? ReplyMessage.failed(error)
          : ReplyMessage.ok(outcome.value(), inv.call.method.resultType()));
    }
    return new End(batch.size(), null);
  }
}
