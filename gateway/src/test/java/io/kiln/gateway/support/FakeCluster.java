package io.kiln.gateway.support;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.DataLocator;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.gateway.spi.PoolDirectory;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.TextModels;
import io.kiln.pools.ValidatedRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * An in-memory stand-in for the control plane and the pools: simulated nodes, each hosting every model
 * except {@link TestModels#ORPHAN}, answering with {@link TestModels#compute} at once unless told to hold
 * or fail. Records every request sent. Thread-safe.
 */
public final class FakeCluster implements ModelDirectory, PoolDirectory, DataLocator {

  /** One request a pool received, in its context (id, deadline, trace, priority, token). */
  public record Sent(String node, String model, String version, InferenceRequest request, long sentAtNanos,
                     long deadlineNanos, CompletableFuture<InferenceResponse> future,
                     io.kiln.pools.RequestContext context) {
  }

  /** A simulated node; its fields are what its pools report and how they behave. */
  public static final class Node {
    public final String id;
    public final boolean local;
    public volatile boolean ready = true;
    public volatile int queueDepth;
    public volatile int inFlight;
    public volatile int capacity = 16;
    /** Leave requests unanswered (they stay queued until cancelled). */
    public volatile boolean hold;
    /** Fail every request with this. */
    public volatile RuntimeException failWith;
    /** Streams send this many chunks, then hold (-1: they send all). */
    public volatile int holdStreamsAfter = -1;
    /** Streams send {@link #streamFailureAfter} chunks, then end with this error (null: none). */
    public volatile RuntimeException streamFailure;
    public volatile int streamFailureAfter;

    Node(String id, boolean local) {
      this.id = id;
      this.local = local;
    }

    void reset() {
      ready = true;
      queueDepth = 0;
      inFlight = 0;
      capacity = 16;
      hold = false;
      failWith = null;
      holdStreamsAfter = -1;
      streamFailure = null;
      streamFailureAfter = 0;
    }
  }

  private final Map<String, Node> nodes = new ConcurrentHashMap<>();
  private final List<String> nodeOrder = new CopyOnWriteArrayList<>();
  private final Map<String, String> dataKeys = new ConcurrentHashMap<>();
  private final List<ModelInfo> models = new CopyOnWriteArrayList<>();
  private final List<ModelInfo> notReady = new CopyOnWriteArrayList<>();
  public final List<Sent> sent = new CopyOnWriteArrayList<>();
  /** The pieces a generation model's streams answer ({@link TestModels#textChunks}); reset restores the default. */
  public volatile List<String> reply = TestModels.REPLY;
  /** How often streams were paused (by a client that reads slower than the model writes). */
  public final java.util.concurrent.atomic.AtomicInteger pauses = new java.util.concurrent.atomic.AtomicInteger();
  /** Whether generation streams end with the contract's finish chunk; false plays a model that breaks it. */
  public volatile boolean finishes = true;

  public FakeCluster(List<ModelInfo> models) {
    this.models.addAll(models);
  }

  public Node addNode(String id, boolean local) {
    Node n = new Node(id, local);
    nodes.put(id, n);
    nodeOrder.add(id);
    return n;
  }

  public Node node(String id) {
    return nodes.get(id);
  }

  /** Serves {@code model} too (for the test class that adds it; {@link #reset()} keeps it). */
  public void addModel(ModelInfo model) {
    if (!models.contains(model)) {
      models.add(model);
    }
  }

  public void mapDataKey(String key, String node) {
    dataKeys.put(key, node);
  }

  /** Marks a model (all versions) not ready until {@link #reset()}. */
  public void setNotReady(String model) {
    models.stream().filter(m -> m.name().equals(model)).forEach(notReady::add);
  }

  /** Back to the initial state: all nodes idle and answering, nothing recorded. */
  public void reset() {
    nodes.values().forEach(Node::reset);
    reply = TestModels.REPLY;
    finishes = true;
    pauses.set(0);
    notReady.clear();
    sent.forEach(s -> s.future().cancel(false));
    sent.clear();
  }

  @Override
  public List<ModelInfo> models() {
    List<ModelInfo> serving = new ArrayList<>();
    for (ModelInfo m : models) {
      if (serving.stream().noneMatch(s -> s.name().equals(m.name()))) {
        serving.add(model(m.name(), null).orElseThrow());
      }
    }
    return serving;
  }

  @Override
  public Optional<ModelInfo> model(String name, String versionOrNull) {
    ModelInfo found = null;
    for (ModelInfo m : models) {
      if (m.name().equals(name) && (versionOrNull == null || m.version().equals(versionOrNull))) {
        found = m;
      }
    }
    if (found != null && notReady.contains(found)) {
      found = found.withReady(false);
    }
    return Optional.ofNullable(found);
  }

  @Override
  public List<PoolEndpoint> pools(String model, String version) {
    if (model.equals(TestModels.ORPHAN)) {
      return List.of();
    }
    List<PoolEndpoint> out = new ArrayList<>();
    for (String id : nodeOrder) {
      Node n = nodes.get(id);
      out.add(new PoolEndpoint(n.id, n.local, n.ready, n.queueDepth, n.inFlight, n.capacity));
    }
    return out;
  }

  @Override
  public CompletableFuture<InferenceResponse> send(PoolEndpoint target, String model, String version,
                                                   ValidatedRequest validated, io.kiln.pools.RequestContext context) {
    long deadlineNanos = context.deadlineNanos();
    Node n = nodes.get(target.nodeId());
    InferenceRequest request = validated.request();
    CompletableFuture<InferenceResponse> f = new CompletableFuture<>();
    sent.add(new Sent(n.id, model, version, request, System.nanoTime(), deadlineNanos, f, context));
    context.cancellation().onCancel(() -> f.cancel(false)); // a withdrawn request: its future reads cancelled
    if (n.failWith != null) {
      f.completeExceptionally(n.failWith);
    } else if (!n.hold) {
      f.complete(TestModels.compute(model(model, version).orElseThrow(), request, n.id));
    }
    return f;
  }

  /**
   * Records the stream as a {@link Sent} (its future completes with the last chunk, or reads cancelled once its token
   * is) and, unless the node holds, answers on the calling context: a model that keeps the text generation contract
   * with {@link TestModels#textChunks} of {@link #reply}, any other with one chunk (the model's computation). The
   * chunks honour pause and resume, stop at the token's cancel, and follow the node's
   * {@link Node#holdStreamsAfter} and {@link Node#streamFailure}.
   */
  @Override
  public io.kiln.pools.ResponseStream stream(PoolEndpoint target, String model, String version,
                                            ValidatedRequest validated, io.kiln.pools.RequestContext context,
                                            int window, int maxChunkBytes, io.kiln.pools.ChunkListener listener) {
    Node n = nodes.get(target.nodeId());
    InferenceRequest request = validated.request();
    CompletableFuture<InferenceResponse> f = new CompletableFuture<>();
    sent.add(new Sent(n.id, model, version, request, System.nanoTime(), context.deadlineNanos(), f, context));
    context.cancellation().onCancel(() -> f.cancel(false));
    if (n.failWith != null) {
      throw n.failWith;
    }
    ModelInfo info = model(model, version).orElseThrow();
    List<InferenceResponse> chunks = TextModels.generates(info.signature())
        ? TestModels.textChunks(info, request, n.id, reply) : List.of(TestModels.compute(info, request, n.id));
    if (!finishes && TextModels.generates(info.signature())) {
      chunks = chunks.subList(0, chunks.size() - 1);
    }
    Chunks stream = new Chunks("fake-" + sent.size(), n, chunks, f, context.cancellation(), listener, pauses);
    if (!n.hold) {
      stream.context.runOnContext(v -> stream.pump());
    }
    return stream;
  }

  /** One stream's chunks, sent on its context while it has not been paused, held or cancelled. */
  private static final class Chunks implements io.kiln.pools.ResponseStream {
    private final String id;
    private final Node node;
    private final List<InferenceResponse> chunks;
    private final CompletableFuture<InferenceResponse> done;
    private final io.kiln.pools.Cancellation token;
    private final io.kiln.pools.ChunkListener listener;
    private final java.util.concurrent.atomic.AtomicInteger pauses;
    private final io.vertx.core.Context context = io.vertx.core.Vertx.currentContext();
    private int next;
    private boolean paused;
    private boolean over;

    Chunks(String id, Node node, List<InferenceResponse> chunks, CompletableFuture<InferenceResponse> done,
           io.kiln.pools.Cancellation token, io.kiln.pools.ChunkListener listener,
           java.util.concurrent.atomic.AtomicInteger pauses) {
      this.pauses = pauses;
      this.id = id;
      this.node = node;
      this.chunks = chunks;
      this.done = done;
      this.token = token;
      this.listener = listener;
    }

    void pump() {
      int holdAfter = node.holdStreamsAfter;
      while (!over && !paused && !token.isCancelled() && next < chunks.size()
          && (holdAfter < 0 || next < holdAfter)) {
        if (node.streamFailure != null && next == node.streamFailureAfter) {
          over = true;
          listener.error(node.streamFailure);
          return;
        }
        listener.chunk(chunks.get(next++));
      }
      if (!over && next == chunks.size() && !token.isCancelled()) {
        over = true;
        done.complete(chunks.get(chunks.size() - 1));
        listener.end(Map.of("kiln_node", node.id, "kiln_chunks", (long) chunks.size()));
      }
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public void pause() {
      paused = true;
      pauses.incrementAndGet();
    }

    @Override
    public void resume() {
      context.runOnContext(v -> {
        paused = false;
        pump();
      });
    }
  }

  @Override
  public Optional<String> nodeFor(String dataKey) {
    return Optional.ofNullable(dataKeys.get(dataKey));
  }

  /** The last request sent, or fails if none was. */
  public Sent last() {
    if (sent.isEmpty()) {
      throw new AssertionError("no request reached a pool");
    }
    return sent.get(sent.size() - 1);
  }
}
