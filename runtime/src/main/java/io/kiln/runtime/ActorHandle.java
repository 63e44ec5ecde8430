package io.kiln.runtime;

import io.kiln.runtime.function.ActorAsyncMethod0;
import io.kiln.runtime.function.ActorAsyncMethod1;
import io.kiln.runtime.function.ActorAsyncMethod2;
import io.kiln.runtime.function.ActorMethod0;
import io.kiln.runtime.function.ActorMethod1;
import io.kiln.runtime.function.ActorMethod2;
import io.kiln.runtime.function.ActorMethod3;
import io.kiln.runtime.function.ActorVoidMethod0;
import io.kiln.runtime.function.ActorVoidMethod1;
import io.kiln.runtime.function.ActorVoidMethod2;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * A reference to a live actor, usable from any thread and (with the cluster) any node. Calls are
 * messages: each returns at once with a future that completes on a Vert.x thread, never blocking the
 * caller. Calls from one caller to one actor are delivered in order.
 *
 * <p>A call's future fails with:
 * <ul>
 *   <li>the method's own exception (the actor stays alive);</li>
 *   <li>{@link ActorDiedException} when the actor died before or while running it (after
 *       {@code max_task_retries} re-sends to a restarted actor);</li>
 *   <li>{@link ActorUnavailableException} when the mailbox is full or the actor cannot be reached: a
 *       {@link NodeUnreachableException} at once when the event-bus connection to the actor's node breaks with the
 *       call in flight (the call may have run), or while that node stays unreachable (not sent);</li>
 *   <li>{@link CallTimeoutException} after the handle's call timeout.</li>
 * </ul>
 *
 * <pre>{@code
 * ActorHandle<Counter> c = runtime.actor(Counter::new).name("c").remote().toCompletableFuture().join();
 * int n = c.call(Counter::add, 5).toCompletableFuture().join();
 * }</pre>
 *
 * @param <T> the actor's class
 */
public interface ActorHandle<T> {

  /** Call timeout of a handle unless {@link #withTimeout} says otherwise. */
  Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(60);

  String actorId();

  /** The actor's name, or null if anonymous. */
  String name();

  String namespace();

  /** The node hosting the actor. */
  String nodeId();

  Class<T> type();

  /** The same actor, with another timeout for calls made through the returned handle. */
  ActorHandle<T> withTimeout(Duration callTimeout);

  <R> CompletionStage<R> call(ActorMethod0<T, R> method);

  <A, R> CompletionStage<R> call(ActorMethod1<T, A, R> method, A a);

  <A, B, R> CompletionStage<R> call(ActorMethod2<T, A, B, R> method, A a, B b);

  <A, B, C, R> CompletionStage<R> call(ActorMethod3<T, A, B, C, R> method, A a, B b, C c);

  CompletionStage<Void> run(ActorVoidMethod0<T> method);

  <A> CompletionStage<Void> run(ActorVoidMethod1<T, A> method, A a);

  <A, B> CompletionStage<Void> run(ActorVoidMethod2<T, A, B> method, A a, B b);

  /** Calls a method that returns a future; it counts against {@code max_concurrency} until that completes. */
  <R> CompletionStage<R> callAsync(ActorAsyncMethod0<T, R> method);

  <A, R> CompletionStage<R> callAsync(ActorAsyncMethod1<T, A, R> method, A a);

  <A, B, R> CompletionStage<R> callAsync(ActorAsyncMethod2<T, A, B, R> method, A a, B b);

  /** The actor's current state as its node sees it (DEAD with the cause once gone). */
  CompletionStage<ActorInfo> info();
}
