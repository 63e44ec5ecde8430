package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.Allocation;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.RetryPolicy;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
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
 * <p>The cell owns the actor's identity and life: its incarnations (constructing the instance, on the loop or the
 * actor's threads), their generation, and breaking one: a restart after the restart policy's wait, or death. The
 * calls themselves, from admission to answer, are its {@link Mailbox}'s, which runs them against the live
 * incarnation and hands a fatal error back here ({@link #fail}).
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
  final ActorContextImpl actorContext = new ActorContextImpl(this);
  private final CompletableFuture<ActorInfo> started = new CompletableFuture<>();
  private final CompletableFuture<Void> terminated = new CompletableFuture<>();

  private MessageConsumer<CallMessage> consumer;
  // The incarnation: read by the mailbox too, on the same context.
  ActorState state = ActorState.PENDING;
  Object instance;
  /** Bumped per incarnation so that completions from a previous one are ignored. */
  int generation;
  /** {@link #generation}, readable by worker threads to stop a batch of a dead incarnation. */
  volatile int liveGeneration;
  private volatile int restarts;
  /** Set when the node is simulated to crash: a dead process answers nobody. */
  volatile boolean abandoned;
  private String deathCause;
  /** Constructions in a row that failed (0 once one succeeds): what the restart after them waits for. */
  private int failedConstructions;
  /** The actor's own threads (WORKER mode), one pool per incarnation; null on the event loop. */
  ActorThreads executor;
  private final Mailbox mailbox;

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
    this.mailbox = new Mailbox(this);
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
    mailbox.pump();
  }

  // ---- calls: the mailbox's -----------------------------------------------------------------------

  private void onCall(Message<CallMessage> message) {
    mailbox.accept(new Invocation(message));
  }

  /** A call arrives, from the event bus or from this node's fast path; runs on {@link #context()}. */
  void accept(Invocation inv) {
    mailbox.accept(inv);
  }

  /** Silences the actor for a simulated process crash: nothing it does from now on is answered. */
  void abandon() {
    abandoned = true;
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

  /** Breaks the incarnation ({@link Mailbox} calls it on a fatal error); on {@link #context()}. */
  void fail(String cause, boolean allowRestart) {
    if (state == ActorState.DEAD) {
      return;
    }
    Object old = instance;
    instance = null;
    generation++;
    liveGeneration = generation;
    RetryPolicy restartPolicy = options.restartPolicy();
    boolean restart = allowRestart && restartPolicy.allows(restarts + 1);
    mailbox.takeBack(restart, options.callRetryPolicy(), cause);
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
    mailbox.failWaiting(died);
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
