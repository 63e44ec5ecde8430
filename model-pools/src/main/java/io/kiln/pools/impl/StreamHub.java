package io.kiln.pools.impl;

import io.kiln.pools.StreamTarget;
import io.kiln.runtime.KilnRuntime;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageConsumer;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's endpoint of the stream protocol ({@link StreamMessage}): two event-bus addresses per node, not per
 * stream, so that opening a stream costs no cluster-wide registration. {@code kiln.stream.in.<node>} takes the
 * chunks workers anywhere send to streams this node receives ({@link InboundStream}s, opened by the node's
 * {@link io.kiln.pools.PoolClient}); {@code kiln.stream.ctl.<node>} takes the credits and cancels receivers send
 * to the streams this node's workers produce ({@link StreamSender}s).
 *
 * <p>One per node: {@link #of} gets or creates it as the runtime's local service. Thread-safe; its consumers run
 * on the context they were registered from and hand each message to its stream at once (a receiver hops to its
 * own context, a sender wakes its worker), so the addresses never queue.
 */
public final class StreamHub {

  private static final Logger LOG = LoggerFactory.getLogger(StreamHub.class);
  static final String IN = "kiln.stream.in.";
  static final String CTL = "kiln.stream.ctl.";
  /** Cancels of streams not (yet) opened here that are remembered: a cancel may overtake its stream's dispatch. */
  static final int MAX_EARLY_CANCELS = 4096;
  private static final Duration REGISTRATION_WAIT = Duration.ofSeconds(30);

  private final Vertx vertx;
  private final String nodeId;
  private final Map<String, InboundStream> inbound = new ConcurrentHashMap<>();
  private final Map<String, StreamSender> outbound = new ConcurrentHashMap<>();
  private final Map<String, StreamJoins> joins = new ConcurrentHashMap<>();
  private final Map<String, Boolean> earlyCancels = new LinkedHashMap<>() {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
      return size() > MAX_EARLY_CANCELS;
    }
  };
  private final MessageConsumer<Buffer> in;
  private final MessageConsumer<Buffer> ctl;

  private StreamHub(Vertx vertx, String nodeId) {
    this.vertx = vertx;
    this.nodeId = nodeId;
    this.in = vertx.eventBus().consumer(IN + nodeId, m -> received(m.body()));
    this.ctl = vertx.eventBus().consumer(CTL + nodeId, m -> control(m.body()));
  }

  /** The hub of {@code runtime}'s node, created (and its addresses registered) on first use. */
  public static StreamHub of(KilnRuntime runtime) {
    synchronized (StreamHub.class) {
      return runtime.localService(StreamHub.class).orElseGet(() -> {
        StreamHub hub = new StreamHub(runtime.vertx(), runtime.nodeId());
        runtime.registerLocalService(StreamHub.class, hub);
        return hub;
      });
    }
  }

  /** Blocks until both addresses are registered cluster-wide (a worker's constructor calls it). */
  public void awaitRegistered() {
    try {
      in.completion().toCompletionStage().toCompletableFuture().get(REGISTRATION_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      ctl.completion().toCompletionStage().toCompletableFuture().get(REGISTRATION_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while registering the stream endpoint", e);
    } catch (Exception e) {
      throw new IllegalStateException("the stream endpoint of node " + nodeId + " did not register: " + e, e);
    }
  }

  String nodeId() {
    return nodeId;
  }

  Vertx vertx() {
    return vertx;
  }

  /** Streams this node receives now. */
  public int inboundCount() {
    return inbound.size();
  }

  /** Streams this node's workers produce now. */
  public int outboundCount() {
    return outbound.size();
  }

  /** The intake of the streaming worker named {@code worker} on this node, created on first use. */
  StreamJoins joins(String worker) {
    return joins.computeIfAbsent(worker, w -> new StreamJoins());
  }

  /** Forgets a worker's intake (the worker is gone for good). */
  void forgetJoins(String worker) {
    joins.remove(worker);
  }

  void addInbound(InboundStream s) {
    inbound.put(s.id(), s);
  }

  void removeInbound(String id) {
    inbound.remove(id);
  }

  /** Registers a worker's stream; a cancel that arrived before it applies at once. */
  StreamSender openOutbound(StreamTarget target, Object monitor, long deadlineNanos) {
    StreamSender s = new StreamSender(this, target, monitor, deadlineNanos);
    outbound.put(target.streamId(), s);
    boolean cancelled;
    synchronized (earlyCancels) {
      cancelled = earlyCancels.remove(target.streamId()) != null;
    }
    if (cancelled) {
      s.cancel();
    }
    return s;
  }

  void removeOutbound(String id) {
    outbound.remove(id);
  }

  void send(String address, StreamMessage m) {
    vertx.eventBus().send(address, m.encode());
  }

  private void received(Buffer body) {
    StreamMessage m;
    try {
      m = StreamMessage.decode(body);
    } catch (IllegalArgumentException e) {
      LOG.warn("node {}: dropped a stream message that does not decode: {}", nodeId, e.getMessage());
      return;
    }
    InboundStream s = inbound.get(m.stream());
    if (s != null) {
      s.receive(m);
    } // else: finished or cancelled here; the worker learns by the cancel already sent
  }

  private void control(Buffer body) {
    StreamMessage m;
    try {
      m = StreamMessage.decode(body);
    } catch (IllegalArgumentException e) {
      LOG.warn("node {}: dropped a stream control message that does not decode: {}", nodeId, e.getMessage());
      return;
    }
    StreamSender s = outbound.get(m.stream());
    if (StreamMessage.CANCEL.equals(m.type())) {
      if (s != null) {
        s.cancel();
      } else {
        synchronized (earlyCancels) {
          earlyCancels.put(m.stream(), Boolean.TRUE);
        }
      }
    } else if (StreamMessage.CREDIT.equals(m.type()) && s != null) {
      s.credit(m.credits());
    }
  }
}
