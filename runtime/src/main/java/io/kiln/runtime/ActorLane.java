package io.kiln.runtime;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/**
 * The own thread of one incarnation of a serial {@link ExecutionMode#WORKER} actor ({@code max_concurrency} 1), for a
 * caller on the actor's node that hands work straight to it: one queued hand-off, without the actor's mailbox, its
 * event loop or a reply consumer. The actor stays the owner of what runs there (its name, placement, restarts,
 * health); a lane only lends its thread. Get one with {@link ActorContext#lane()} inside the actor's constructor or a
 * method, and publish it to local callers yourself.
 *
 * <p><b>Threading.</b> {@link #submit} may be called from any thread and never blocks. The work runs on the actor's
 * thread, strictly serially with its calls and other lane work (never beside them), and the returned future
 * completes on that thread: its dependents run there too, so they must be quick and must not block; hand anything
 * longer to a thread of your own.
 *
 * <p><b>Errors.</b> The future fails with what the work threw. A {@link java.lang.Error} (e.g. {@link FatalActorError})
 * also breaks the incarnation, as it would from an actor method (restarted while restarts remain). When the
 * incarnation ends (killed, restarted, failed, its node closing) before the work finished, the future fails at once
 * with {@link ActorDiedException} ({@link NotRunException} for work not yet begun, which never runs); work already running is never interrupted (its
 * result goes nowhere), as a call's is not. Every future completes.
 */
public interface ActorLane {

  /** Runs {@code work} on the actor's thread; see the interface comment. */
  <T> CompletableFuture<T> submit(Callable<T> work);

  /** Whether its incarnation is still the live one: false once it ended (new work then fails at once). */
  boolean live();

  /**
   * The lane's incarnation ended before the work began: it never ran, so sending it again (e.g. as an actor call,
   * which a restarted actor's next incarnation takes) runs it once.
   */
  final class NotRunException extends ActorDiedException {
    public NotRunException(ActorDiedException ended) {
      super(ended.actorId(), ended.getMessage() + " (the work never began)");
    }
  }
}
