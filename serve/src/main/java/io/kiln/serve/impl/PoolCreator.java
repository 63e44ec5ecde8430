package io.kiln.serve.impl;

import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolSpec;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.WireCodec;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * Creates pool managers from the node they are pinned to: the leader asks that node's controller over the
 * event bus ({@link #address}) and it get-or-creates the manager itself.
 *
 * <p>Why not from the leader: a named actor's registry entry stays PENDING, without a node, until its
 * constructor has run, and while it is PENDING the runtime frees the name if its <em>creator's</em> node
 * dies. Had the leader claimed the name and died in that window, the next leader would free it while the
 * manager still came up on its node, unregistered, and then create a second one there. Claimed by the
 * manager's own node, the name lives exactly as long as the manager can.
 *
 * <p>Falls back to creating from the calling node when the target node runs no controller. Thread-safe;
 * non-blocking.
 */
final class PoolCreator implements AutoCloseable {

  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

  private final KilnRuntime runtime;
  private final MessageConsumer<String> consumer;

  PoolCreator(KilnRuntime runtime) {
    this.runtime = runtime;
    this.consumer = runtime.vertx().eventBus().consumer(address(runtime.nodeId()), this::requested);
  }

  static String address(String nodeId) {
    return "kiln.serve.create-pool." + nodeId;
  }

  /** Completes once this node takes requests (on a cluster, once the registration has propagated). */
  CompletionStage<Void> ready() {
    return consumer.completion().toCompletionStage();
  }

  /** Get-or-creates the manager of {@code spec} on {@code spec.nodeId()}; completes with its actor id. */
  CompletionStage<String> create(PoolSpec spec) {
    DeliveryOptions delivery = new DeliveryOptions().setSendTimeout(REQUEST_TIMEOUT.toMillis());
    return runtime.vertx().eventBus().<String>request(address(spec.nodeId()), WireCodec.toJson(spec), delivery)
        .map(Message::body)
        .toCompletionStage()
        .exceptionallyCompose(err -> err instanceof ReplyException r && r.failureType() == ReplyFailure.NO_HANDLERS
            ? local(spec) : CompletableFuture.failedFuture(err));
  }

  private void requested(Message<String> m) {
    PoolSpec spec;
    try {
      spec = WireCodec.fromJson(m.body(), PoolSpec.class);
    } catch (RuntimeException e) {
      m.fail(400, "malformed pool spec: " + e.getMessage());
      return;
    }
    if (!spec.nodeId().equals(runtime.nodeId())) {
      m.fail(400, "pool " + spec.managerName() + " belongs on " + spec.nodeId() + ", not " + runtime.nodeId());
      return;
    }
    local(spec).whenComplete((id, err) -> {
      if (err != null) {
        Throwable t = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
        m.fail(500, "creating pool " + spec.managerName() + " failed: " + t.getMessage());
      } else {
        m.reply(id);
      }
    });
  }

  private CompletionStage<String> local(PoolSpec spec) {
    return PoolManager.getOrCreate(runtime, spec).thenApply(ActorHandle::actorId);
  }

  @Override
  public void close() {
    consumer.unregister();
  }
}
