package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.ActorUnavailableException;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.Futures;
import io.kiln.runtime.RetryPolicy;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An actor cell's calls from arrival to answer: admission ({@code max_pending_calls}), the calls waiting and those
 * in progress ({@code max_concurrency}, or one batch at a time for a serial worker actor), running each on the event
 * loop or on the actor's threads, and finishing it: answered, or on a fatal error handed to the cell, which breaks
 * the incarnation. The {@link ActorCell} owns the incarnation the calls run against (instance, generation, the
 * actor's threads) and its life: when it breaks, the cell takes the calls in progress back ({@link #takeBack}) and,
 * when it dies, fails what waits ({@link #failWaiting}); once an incarnation is ALIVE it {@link #pump}s.
 *
 * <p>This is the cell's hot path, split out of it as it was: no allocation, hop or dispatch was added; every call
 * between the two is a direct call on a final class.
 *
 * <p>Threading: everything here runs on the cell's context, except the tasks handed to the actor's threads.
 */
final class Mailbox {

  private static final Logger LOG = LoggerFactory.getLogger(ActorCell.class);

  private final ActorCell cell;
  private final ActorOptions options;
  private final ArrayDeque<Invocation> waiting = new ArrayDeque<>();
  private final Set<Invocation> running = new LinkedHashSet<>();

  Mailbox(ActorCell cell) {
    this.cell = cell;
    this.options = cell.options;
  }

  /** A call arrives, from the event bus or from this node's fast path; runs on the cell's context. */
  void accept(Invocation inv) {
    if (cell.state == ActorState.DEAD) {
      inv.reply(ReplyMessage.failed(cell.diedException()));
      return;
    }
    if (waiting.size() >= options.maxPendingCalls()) {
      inv.reply(ReplyMessage.failed(new ActorUnavailableException("actor " + cell.displayName()
          + " has " + waiting.size() + " calls waiting (max_pending_calls); call refused")));
      return;
    }
    waiting.add(inv);
    pump();
  }

  /** Starts waiting calls while the actor is ALIVE and has room. */
  void pump() {
    if (options.mode() == ExecutionMode.WORKER && options.maxConcurrency() == 1) {
      if (cell.state == ActorState.ALIVE && running.isEmpty() && !waiting.isEmpty()) {
        beginBatch();
      }
      return;
    }
    while (cell.state == ActorState.ALIVE && running.size() < options.maxConcurrency() && !waiting.isEmpty()) {
      begin(waiting.poll());
    }
  }

  /** One call at a time on the event loop, or on one of several worker threads. */
  private void begin(Invocation inv) {
    running.add(inv);
    int gen = cell.generation;
    Object target = cell.instance;
    if (options.mode() == ExecutionMode.EVENT_LOOP) {
      inv.started = true;
      executed(inv, gen, invoke(inv, target));
    } else {
      cell.executor.run(cell.context(), () -> {
        inv.started = true;
        return invoke(inv, target);
      }, outcome -> executed(inv, gen, outcome), rejected -> executed(inv, gen, new Outcome(null, rejected)));
    }
  }

  /** A serial worker actor hands its thread everything waiting, up to {@link SerialBatch#MAX} calls. */
  private void beginBatch() {
    List<Invocation> batch = new ArrayList<>(Math.min(waiting.size(), SerialBatch.MAX));
    while (batch.size() < SerialBatch.MAX && !waiting.isEmpty()) {
      batch.add(waiting.poll());
    }
    running.addAll(batch);
    int gen = cell.generation;
    Object target = cell.instance;
    int[] tokens = new int[batch.size()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = batch.get(i).token();
    }
    ActorCell c = cell;
    c.executor.run(c.context(), () -> SerialBatch.run(batch, tokens, () -> c.liveGeneration != gen || c.abandoned,
            inv -> invoke(inv, target)), end -> batchEnded(batch, gen, end),
        rejected -> batchEnded(batch, gen, new SerialBatch.End(0, new Outcome(null, rejected))));
  }

  private void batchEnded(List<Invocation> batch, int gen, SerialBatch.End end) {
    if (gen != cell.generation || cell.abandoned) {
      return; // the incarnation died meanwhile; takeBack() dealt with everything in running
    }
    int stop = end.stoppedAt();
    for (int i = 0; i < stop; i++) {
      running.remove(batch.get(i));
    }
    for (int i = batch.size() - 1; i > stop; i--) {
      Invocation notStarted = batch.get(i);
      running.remove(notStarted);
      waiting.addFirst(notStarted);
    }
    if (stop < batch.size()) {
      Invocation current = batch.get(stop);
      if (end.outcome() == null) {
        running.remove(current);
        waiting.addFirst(current);
      } else {
        executed(current, gen, end.outcome()); // a pending future, or a fatal error handled by finished()
        return;
      }
    }
    pump();
  }

  private Outcome invoke(Invocation inv, Object target) {
    CallMessage call = inv.call;
    var previous = CurrentActor.set(cell.actorContext);
    try {
      return new Outcome(Invoker.callActor(call.fn, call.method, target, call.args), null);
    } catch (Throwable t) {
      return new Outcome(null, t);
    } finally {
      CurrentActor.set(previous);
    }
  }

  private void executed(Invocation inv, int gen, Outcome outcome) {
    if (outcome.error() == null && outcome.value() instanceof CompletionStage<?> stage) {
      // An asynchronous method holds its concurrency slot until its future completes.
      stage.whenComplete((v, e) -> {
        if (finishesInline()) {
          finished(inv, gen, new Outcome(v, e));
        } else {
          cell.context().runOnContext(x -> finished(inv, gen, new Outcome(v, e)));
        }
      });
    } else {
      finished(inv, gen, outcome);
    }
  }

  /**
   * Whether an asynchronous method's future, completing on this thread now, may be finished here instead of in a
   * task queued on the cell's context (one hop less per call): only on the cell's own context, and only outside
   * any actor method. {@link #finished} answers and pumps the next call, which runs an actor method: done from
   * inside an actor method (this actor's own, completing a future an earlier call of it returned) it would nest
   * one method in another, so that case is queued as before. A future already complete when the method returns
   * finishes at once, as a synchronous method's answer does.
   * Other code on the cell's context that completes such a future (a pool's dispatcher settling a batch, a
   * Vert.x client's handler) sees the next call run inside its {@code complete}, as it already sees the
   * method's own continuations: the pool dispatcher defers its completions until its state is consistent
   * ({@code Settlements}) and returns at once from a re-entrant run, so a submit from there is safe.
   * The context being current is not enough: Vert.x makes it current on a worker thread while
   * {@code executeBlocking} code started from it runs, so the thread must be the loop's too, or the mailbox would be
   * touched off the event loop.
   */
  private boolean finishesInline() {
    return Vertx.currentContext() == cell.context() && Context.isOnEventLoopThread()
        && CurrentActor.get() == null;
  }

  private void finished(Invocation inv, int gen, Outcome outcome) {
    if (cell.abandoned || gen != cell.generation || !running.remove(inv)) {
      return; // the incarnation that ran it is gone; the call was already answered or re-queued
    }
    Throwable error = outcome.error() == null ? null : Futures.unwrap(outcome.error());
    if (error instanceof Error fatal) {
      running.add(inv); // it was in progress when the actor broke: retried or failed with the others
      LOG.warn("actor {} ({}): fatal error in {}: {}", cell.displayName(), cell.className(),
          inv.call.method.displayName(), fatal.toString());
      cell.fail("fatal error in " + inv.call.method.displayName() + ": " + fatal, true);
      return;
    }
    inv.reply(error != null ? ReplyMessage.failed(error)
        : ReplyMessage.ok(outcome.value(), inv.call.method.resultType()));
    pump();
  }

  /**
   * The incarnation broke: every call in progress is re-queued at the front, in order, when the actor restarts and
   * the call may be retried (a call handed to a thread but never begun always may, without using a retry), and
   * otherwise failed with {@code cause}.
   */
  void takeBack(boolean restart, RetryPolicy callRetry, String cause) {
    List<Invocation> inProgress = new ArrayList<>(running);
    running.clear();
    for (int i = inProgress.size() - 1; i >= 0; i--) {
      Invocation inv = inProgress.get(i);
      boolean retry = restart && (!inv.started || callRetry.allows(inv.retries + 1));
      if (retry) {
        if (!inv.revoke()) {
          continue; // a worker thread answered it just before the actor broke
        }
        if (inv.started) {
          inv.retries++; // a call handed to a thread but never begun is not a retry
        }
        inv.started = false;
        waiting.addFirst(inv);
      } else {
        inv.reply(ReplyMessage.failed(new ActorDiedException(cell.actorId,
            "actor " + cell.displayName() + " died while running " + inv.call.method.displayName() + ": " + cause)));
      }
    }
  }

  /** The actor is dead: every waiting call fails with {@code died}. */
  void failWaiting(ActorDiedException died) {
    for (Invocation inv : waiting) {
      inv.reply(ReplyMessage.failed(died));
    }
    waiting.clear();
  }
}
