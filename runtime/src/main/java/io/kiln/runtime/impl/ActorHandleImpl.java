package io.kiln.runtime.impl;

import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
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
import io.vertx.core.eventbus.DeliveryOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletionStage;

/** An immutable actor reference; every call goes through {@link CallPath#invoke}. */
final class ActorHandleImpl<T> implements ActorHandle<T> {

  private static final Object[] NO_ARGS = new Object[0];

  private final CallPath callPath;
  final String actorId;
  private final String namespace;
  private final String name;
  /** Where the actor lives; moves when the leader re-creates the actor after its node died. */
  volatile String nodeId;
  private final Class<T> type;
  final Duration timeout;
  final DeliveryOptions delivery;
  /** {@link #timeout} for local calls' deadlines. */
  final long timeoutNanos;

  ActorHandleImpl(CallPath callPath, String actorId, String namespace, String name, String nodeId, Class<T> type,
                  Duration timeout) {
    this.callPath = callPath;
    this.actorId = actorId;
    this.namespace = namespace;
    this.name = name;
    this.nodeId = nodeId;
    this.type = type;
    this.timeout = timeout;
    this.delivery = new DeliveryOptions().setSendTimeout(Math.max(1, timeout.toMillis()));
    this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, timeout.toMillis()));
  }

  @Override
  public String actorId() {
    return actorId;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String namespace() {
    return namespace;
  }

  @Override
  public String nodeId() {
    return nodeId;
  }

  @Override
  public Class<T> type() {
    return type;
  }

  void moveTo(String newNodeId) {
    nodeId = newNodeId;
  }

  @Override
  public ActorHandle<T> withTimeout(Duration callTimeout) {
    if (callTimeout.isZero() || callTimeout.isNegative()) {
      throw new IllegalArgumentException("call timeout must be positive");
    }
    return new ActorHandleImpl<>(callPath, actorId, namespace, name, nodeId, type, callTimeout);
  }

  @Override
  public <R> CompletionStage<R> call(ActorMethod0<T, R> method) {
    return callPath.invoke(this, method, NO_ARGS);
  }

  @Override
  public <A, R> CompletionStage<R> call(ActorMethod1<T, A, R> method, A a) {
    return callPath.invoke(this, method, new Object[] {a});
  }

  @Override
  public <A, B, R> CompletionStage<R> call(ActorMethod2<T, A, B, R> method, A a, B b) {
    return callPath.invoke(this, method, new Object[] {a, b});
  }

  @Override
  public <A, B, C, R> CompletionStage<R> call(ActorMethod3<T, A, B, C, R> method, A a, B b, C c) {
    return callPath.invoke(this, method, new Object[] {a, b, c});
  }

  @Override
  public CompletionStage<Void> run(ActorVoidMethod0<T> method) {
    return callPath.invoke(this, method, NO_ARGS);
  }

  @Override
  public <A> CompletionStage<Void> run(ActorVoidMethod1<T, A> method, A a) {
    return callPath.invoke(this, method, new Object[] {a});
  }

  @Override
  public <A, B> CompletionStage<Void> run(ActorVoidMethod2<T, A, B> method, A a, B b) {
    return callPath.invoke(this, method, new Object[] {a, b});
  }

  @Override
  public <R> CompletionStage<R> callAsync(ActorAsyncMethod0<T, R> method) {
    return callPath.invoke(this, method, NO_ARGS);
  }

  @Override
  public <A, R> CompletionStage<R> callAsync(ActorAsyncMethod1<T, A, R> method, A a) {
    return callPath.invoke(this, method, new Object[] {a});
  }

  @Override
  public <A, B, R> CompletionStage<R> callAsync(ActorAsyncMethod2<T, A, B, R> method, A a, B b) {
    return callPath.invoke(this, method, new Object[] {a, b});
  }

  @Override
  public CompletionStage<ActorInfo> info() {
    return callPath.actorInfo(actorId, nodeId);
  }

  @Override
  public String toString() {
    return "ActorHandle[" + (name == null ? actorId : namespace + "/" + name) + " on " + nodeId + "]";
  }
}
