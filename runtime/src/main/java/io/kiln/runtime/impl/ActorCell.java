package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.ActorUnavailableException;
import io.kiln.runtime.Allocation;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.Futures;
import io.kiln.runtime.RetryPolicy;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One actor on its node: a verticle whose event-loop context owns the actor's mailbox and state machine.
 * Methods run on the event loop ({@link ExecutionMode#EVENT_LOOP}) or on the actor's own threads
 * ({@link ExecutionMode#WORKER}); either way the mailbox stays on the event loop, so a call blocked in user
 * code never stops the actor from refusing, failing or re-queuing other calls.
 *
 * <p>Threading: every field below the constructor's is touched only on {@link #context()}.
 */
final class ActorCell extends VerticleBase {

  private static final Logger LOG = LoggerFactory.getLogger(ActorCell.class);

  final NodeAgent agent;
  final String actorId;
  final ActorOptions options;
  final Allocation allocation;
  final String ownerNodeId;
  final String ownerActorId;
  private final MethodRef ctor;
  private final Object ctorFn;
  private final Object[] ctorArgs;
  private final ActorContextImpl actorContext = new ActorContextImpl(this);
  private final CompletableFuture<ActorInfo> started = new CompletableFuture<>();
  private final CompletableFuture<Void> terminated = new CompletableFuture<>();

  private MessageConsumer<CallMessage> consumer;
  private ActorState state = ActorState.PENDING;
  private Object instance;
  /** Bumped per incarnation so that completions from a previous one are ignored. */
  private int generation;
  /** {@link #generation}, readable by worker threads to stop a batch of a dead incarnation. */
  private volatile int liveGeneration;
  private volatile int restarts;
  /** Set when the node is simulated to crash: a dead process answers nobody. */
  private volatile boolean abandoned;
  private String deathCause;
  /** Constructions in a row that failed (0 once one succeeds): what the restart after them waits for. */
  private int failedConstructions;
  /** The actor's own threads (WORKER mode), one pool per incarnation; null on the event loop. */
  private ActorThreads executor;
  private final ArrayDeque<Invocation> mailbox = new ArrayDeque<>();
  private final Set<Invocation> running = new LinkedHashSet<>();

  ActorCell(NodeAgent agent, String actorId, ActorOptions options, Allocation allocation, MethodRef ctor,
            Object ctorFn, Object[] ctorArgs, String ownerNodeId, String ownerActorId, int restarts) {
    this.restarts = restarts;
    this.agent = agent;
    this.actorId = actorId;
    this.options = options;
    this.allocation = allocation;
    this.ctor = ctor;
    this.ctorFn = ctorFn;
    this.ctorArgs = ctorArgs;
    this.ownerNodeId = ownerNodeId;
    this.ownerActorId = ownerActorId;
  }

  static String address(String actorId) {
    return "kiln.actor." + actorId;
  }

  Context context() {
    return context;
  }

  /** Whether the verticle has been deployed (its context assigned); {@link #deploymentID()} needs it. */
  boolean deployed() {
    return context != null;
  }

  int restarts() {
    return restarts;
  }

  String className() {
    return ctor.ownerClass().getName();
  }

  /** Completes once the actor is first ALIVE, or fails when it died before that. */
  CompletionStage<ActorInfo> started() {
    return started;
  }

  /** Completes once the actor is dead and its verticle undeployed. */
  CompletableFuture<Void> terminated() {
    return terminated;
  }

  @Override
  public Future<?> start() {
    consumer = vertx.eventBus().consumer(address(actorId), this::onCall);
    // Construct only once the address is routable, so no early call finds "no handlers".
    return consumer.completion().onSuccess(v -> construct());
  }

  @Override
  public Future<?> stop() {
    return consumer == null ? Future.succeededFuture() : consumer.unregister();
  }

  ActorInfo info() {
    return new ActorInfo(actorId, options.namespace(), options.name(), className(), agent.nodeId(), state,
        options.lifetime(), restarts, deathCause);
  }

  ActorState state() {
    return state;
  }

  // ---- construction -------------------------------------------------------------------------------

  private void construct() {
    int gen = ++generation;
    liveGeneration = gen;
    if (options.mode() == ExecutionMode.WORKER) {
      executor = ActorThreads.start("kiln-actor-" + (options.name() == null ? actorId : options.name()) + "-" + gen + "-",
          options.maxConcurrency());
      executor.run(context, this::newInstance, outcome -> constructed(gen, outcome),
          rejected -> constructed(gen, new Outcome(null, rejected)));
    } else {
      constructed(gen, newInstance());
    }
  }

  private Outcome newInstance() {
    var previous = CurrentActor.set(actorContext);
    try {
      return new Outcome(Invoker.construct(ctorFn, ctor, ctorArgs), null);
    } catch (Throwable t) {
      return new Outcome(null, t);
    } finally {
      CurrentActor.set(previous);
    }
  }

  private void constructed(int gen, Outcome outcome) {
    if (gen != generation || state == ActorState.DEAD) {
      ActorThreads.closeQuietly(outcome.value(), displayName());
      return;
    }
    if (outcome.error() != null) {
      LOG.warn("actor {} ({}): constructor failed: {}", displayName(), className(), outcome.error().toString());
      failedConstructions++;
      fail("constructor of " + ctor.ownerClass().getSimpleName() + " failed: " + outcome.error(), true);
      return;
    }
    failedConstructions = 0;
    instance = outcome.value();
    state = ActorState.ALIVE;
    agent.stateChanged(this);
    started.complete(info());
    pump();
  }

  // ---- calls --------------------------------------------------------------------------------------

  private void onCall(Message<CallMessage> message) {
    accept(new Invocation(message));
  }

  /** A call arrives, from the event bus or from this node's fast path; runs on {@link #context()}. */
  void accept(Invocation inv) {
    if (state == ActorState.DEAD) {
      inv.reply(ReplyMessage.failed(diedException()));
      return;
    }
    if (mailbox.size() >= options.maxPendingCalls()) {
      inv.reply(ReplyMessage.failed(new ActorUnavailableException("actor " + displayName()
          + " has " + mailbox.size() + " calls waiting (max_pending_calls); call refused")));
      return;
    }
    mailbox.add(inv);
    pump();
  }

  private void pump() {
    if (options.mode() == ExecutionMode.WORKER && options.maxConcurrency() == 1) {
      if (state == ActorState.ALIVE && running.isEmpty() && !mailbox.isEmpty()) {
        beginBatch();
      }
      return;
    }
    while (state == ActorState.ALIVE && running.size() < options.maxConcurrency() && !mailbox.isEmpty()) {
      begin(mailbox.poll());
    }
  }

  /** One call at a time on the event loop, or on one of several worker threads. */
  private void begin(Invocation inv) {
    running.add(inv);
    int gen = generation;
    Object target = instance;
    if (options.mode() == ExecutionMode.EVENT_LOOP) {
      inv.started = true;
      executed(inv, gen, invoke(inv, target));
    } else {
      executor.run(context, () -> {
        inv.started = true;
        return invoke(inv, target);
      }, outcome -> executed(inv, gen, outcome), rejected -> executed(inv, gen, new Outcome(null, rejected)));
    }
  }

  /** A serial worker actor hands its thread everything waiting, up to {@link SerialBatch#MAX} calls. */
  private void beginBatch() {
    List<Invocation> batch = new ArrayList<>(Math.min(mailbox.size(), SerialBatch.MAX));
    while (batch.size() < SerialBatch.MAX && !mailbox.isEmpty()) {
      batch.add(mailbox.poll());
    }
    running.addAll(batch);
    int gen = generation;
    Object target = instance;
    int[] tokens = new int[batch.size()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = batch.get(i).token();
    }
    executor.run(context, () -> SerialBatch.run(batch, tokens, () -> liveGeneration != gen || abandoned,
            inv -> invoke(inv, target)), end -> batchEnded(batch, gen, end),
        rejected -> batchEnded(batch, gen, new SerialBatch.End(0, new Outcome(null, rejected))));
  }

  private void batchEnded(List<Invocation> batch, int gen, SerialBatch.End end) {
    if (gen != generation || abandoned) {
      return; // the incarnation died meanwhile; fail() dealt with everything in running
    }
    int stop = end.stoppedAt();
    for (int i = 0; i < stop; i++) {
      running.remove(batch.get(i));
    }
    for (int i = batch.size() - 1; i > stop; i--) {
      Invocation notStarted = batch.get(i);
      running.remove(notStarted);
      mailbox.addFirst(notStarted);
    }
    if (stop < batch.size()) {
      Invocation current = batch.get(stop);
      if (end.outcome() == null) {
        running.remove(current);
        mailbox.addFirst(current);
      } else {
        executed(current, gen, end.outcome()); // a pending future, or a fatal error handled by finished()
        return;
      }
    }
    pump();
  }

  private Outcome invoke(Invocation inv, Object target) {
    CallMessage call = inv.call;
    var previous = CurrentActor.set(actorContext);
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
          context.runOnContext(x -> finished(inv, gen, new Outcome(v, e)));
        }
      });
    } else {
      finished(inv, gen, outcome);
    }
  }

  /**
   * Whether an asynchronous method's future, completing on this thread now, may be finished here instead of in a
   * task queued on {@link #context()} (one hop less per call): only on the cell's own context, and only outside
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
    return Vertx.currentContext() == context && io.vertx.core.Context.isOnEventLoopThread()
        && CurrentActor.get() == null;
  }

  /** Silences the actor for a simulated process crash: nothing it does from now on is answered. */
  void abandon() {
    abandoned = true;
  }

  private void finished(Invocation inv, int gen, Outcome outcome) {
    if (abandoned || gen != generation || !running.remove(inv)) {
      return; // the incarnation that ran it is gone; the call was already answered or re-queued
    }
    Throwable error = outcome.error() == null ? null : Futures.unwrap(outcome.error());
    if (error instanceof Error fatal) {
      running.add(inv); // it was in progress when the actor broke: retried or failed with the others
      LOG.warn("actor {} ({}): fatal error in {}: {}", displayName(), className(),
          inv.call.method.displayName(), fatal.toString());
      fail("fatal error in " + inv.call.method.displayName() + ": " + fatal, true);
      return;
    }
    inv.reply(error != null ? ReplyMessage.failed(error)
        : ReplyMessage.ok(outcome.value(), inv.call.method.resultType()));
    pump();
  }

  // ---- death and restart --------------------------------------------------------------------------

  /**
   * Kills the actor: restarted if allowed and restarts remain, else dead. Completes once the restart has
   * begun or, for a death, once the actor is gone and its name freed.
   */
  CompletableFuture<Void> kill(String cause, boolean allowRestart) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    if (context == null) {
      // Not deployed yet: the kill is applied once it is (fail() is a no-op for a dead cell anyway).
      // The verticle's own vertx is set only when it deploys: use the node's (a node closing while an actor was
      // being created met a null here).
      agent.vertx().runOnContext(v -> kill(cause, allowRestart).whenComplete((x, e) -> done.complete(null)));
      return done;
    }
    context.runOnContext(v -> {
      fail(cause, allowRestart);
      if (state == ActorState.DEAD) {
        terminated.whenComplete((x, e) -> done.complete(null));
      } else {
        done.complete(null);
      }
    });
    return done;
  }

  private void fail(String cause, boolean allowRestart) {
    if (state == ActorState.DEAD) {
      return;
    }
    Object old = instance;
    instance = null;
    generation++;
    liveGeneration = generation;
    RetryPolicy restartPolicy = options.restartPolicy();
    boolean restart = allowRestart && restartPolicy.allows(restarts + 1);
    RetryPolicy callRetry = options.callRetryPolicy();
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
        mailbox.addFirst(inv);
      } else {
        inv.reply(ReplyMessage.failed(new ActorDiedException(actorId,
            "actor " + displayName() + " died while running " + inv.call.method.displayName() + ": " + cause)));
      }
    }
    ActorThreads threads = executor;
    executor = null;
    ActorThreads.retire(threads, old, displayName());
    if (restart) {
      restarts++;
      state = ActorState.RESTARTING;
      deathCause = cause;
      long wait = restartPolicy.delayMillis(failedConstructions);
      LOG.info("actor {} restarting ({} of {}, {}){}: {}", displayName(), restarts,
          options.maxRestarts() == -1 ? "unlimited" : options.maxRestarts(), restartPolicy.name(),
          wait > 0 ? " in " + wait + " ms" : "", cause);
      agent.stateChanged(this);
      if (wait == 0) {
        construct();
      } else {
        int gen = generation;
        agent.wakeAfter(wait, context, () -> {
          if (state == ActorState.RESTARTING && generation == gen) { // not killed or failed again meanwhile
            construct();
          }
        });
      }
    } else {
      die(restarts > 0 && allowRestart ? cause + " (after " + restarts + " restarts)" : cause);
    }
  }

  /**
   * How long the restart after {@code failedInARow} failed constructions waits ({@link RetryPolicy#ACTOR_RESTART}):
   * none after a live incarnation failed (a crash mid-call restarts at once), else 100 ms doubled per failure up to
   * 5 s. A constructor that fails every time (a model file that does not load, a process killed for memory while
   * loading) would otherwise be re-run back to back as often as {@code max_restarts} allows, forever with -1; this
   * keeps a crash loop to a few attempts a minute, RESTARTING in status meanwhile.
   */
  static long constructorBackoffMillis(int failedInARow) {
    return RetryPolicy.ACTOR_RESTART.delayMillis(failedInARow);
  }

  private void die(String cause) {
    state = ActorState.DEAD;
    deathCause = cause;
    ActorDiedException died = diedException();
    for (Invocation inv : mailbox) {
      inv.reply(ReplyMessage.failed(died));
    }
    mailbox.clear();
    started.completeExceptionally(died);
    agent.cellDied(this);
  }

  ActorDiedException diedException() {
    return new ActorDiedException(actorId, "actor " + displayName() + " is dead: " + deathCause);
  }

  String displayName() {
    return options.name() == null ? actorId : options.namespace() + "/" + options.name();
  }
}
