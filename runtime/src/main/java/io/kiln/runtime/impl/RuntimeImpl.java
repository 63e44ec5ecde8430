package io.kiln.runtime.impl;

import io.kiln.runtime.ActorCreation;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorNotFoundException;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.ClusterView;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.SharedStore;
import io.kiln.runtime.StoreCodec;
import io.kiln.runtime.TaskCreation;
import io.kiln.runtime.function.ActorFactory0;
import io.kiln.runtime.function.ActorFactory1;
import io.kiln.runtime.function.ActorFactory2;
import io.kiln.runtime.function.ActorFactory3;
import io.kiln.runtime.function.TaskFunction0;
import io.kiln.runtime.function.TaskFunction1;
import io.kiln.runtime.function.TaskFunction2;
import io.kiln.runtime.function.TaskFunction3;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import java.io.Serializable;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime of one node. The same code runs single-node (in-memory cluster backend) and clustered
 * (Hazelcast backend, clustered event bus): everything is addressed by event-bus address and shared map,
 * never by object reference, so the only difference is whether messages are encoded.
 */
public final class RuntimeImpl implements KilnRuntime {

  private static final Logger LOG = LoggerFactory.getLogger(RuntimeImpl.class);
  static final DeliveryOptions CONTROL = new DeliveryOptions().setSendTimeout(30_000);

  private final Vertx vertx;
  private final ClusterBackend backend;
  private final NodeOptions node;
  private final NodeTable nodeTable;
  private final ActorRegistry registry;
  private final NodeAgent agent;
  private final Placer placer;
  private final CallTracker calls;
  private final ActorCreator creator;
  private final CallPath callPath;
  private final Supplier<Future<Void>> onShutdown;
  private volatile boolean stopped;
  private final java.util.Map<Class<?>, Object> localServices = new java.util.concurrent.ConcurrentHashMap<>();

  private RuntimeImpl(Vertx vertx, ClusterBackend backend, NodeOptions node, Supplier<Future<Void>> onShutdown) {
    this.vertx = vertx;
    this.backend = backend;
    this.node = node;
    this.onShutdown = onShutdown;
    this.nodeTable = new NodeTable(backend);
    this.registry = new ActorRegistry(backend.map(ActorRegistry.MAP));
    this.calls = new CallTracker(node.nodeId());
    this.agent = new NodeAgent(this, vertx, node);
    this.placer = new Placer(vertx.getOrCreateContext(), this::clusterView);
    this.creator = new ActorCreator(this);
    this.callPath = new CallPath(this);
  }

  /**
   * Starts a node on {@code vertx} (whose event bus is clustered when {@code backend} is). The node
   * registers its agent, publishes its row and starts following membership.
   *
   * @param onShutdown run after the node has left (closes what the caller created for it)
   */
  public static Future<RuntimeImpl> start(Vertx vertx, ClusterBackend backend, NodeOptions node,
                                          Supplier<Future<Void>> onShutdown) {
    Codecs.register(vertx);
    RuntimeImpl rt = new RuntimeImpl(vertx, backend, node, onShutdown);
    backend.addMembershipListener(rt.new Membership());
    rt.nodeTable.onChange(rt.placer::resourcesChanged);
    return Future.fromCompletionStage(rt.nodeTable.load())
        .compose(v -> rt.agent.start())
        .map(v -> {
          rt.agent.publishRow();
          if (backend.isLeader()) {
            rt.repairRegistry();
          }
          LOG.info("node {} started with {} on {}", node.nodeId(), node.resources(), node.host());
          return rt;
        });
  }

  // ---- accessors for the implementation -----------------------------------------------------------

  ActorRegistry registry() {
    return registry;
  }

  NodeTable nodeTable() {
    return nodeTable;
  }

  Placer placer() {
    return placer;
  }

  NodeAgent agent() {
    return agent;
  }

  CallTracker calls() {
    return calls;
  }

  /** The cluster back-end this node runs on; for the runtime's own wiring and tests, not for other modules. */
  public ClusterBackend backend() {
    return backend;
  }

  @Override
  public void advertise(String service, String value) {
    agent.setService(service, value);
  }

  /** The node-table rows' services (e.g. {@code http} ports) by node id, for routing. */
  public java.util.Map<String, java.util.Map<String, String>> services() {
    java.util.Map<String, java.util.Map<String, String>> out = new java.util.HashMap<>();
    nodeTable.records().forEach(r -> out.put(r.nodeId(), r.services() == null ? java.util.Map.of() : r.services()));
    return out;
  }

  @Override
  public List<String> members() {
    return backend.members();
  }

  @Override
  public boolean isLeader() {
    return backend.isLeader();
  }

  @Override
  public void addMembershipListener(MembershipListener listener) {
    backend.addMembershipListener(listener);
  }

  @Override
  public <V> SharedStore<V> store(String name, Class<V> type) {
    return store(name, StoreCodec.json(type));
  }

  @Override
  public <V> SharedStore<V> store(String name, StoreCodec<V> codec) {
    return new SharedStoreImpl<>(backend.map(name), codec);
  }

  // ---- KilnRuntime --------------------------------------------------------------------------------

  @Override
  public String nodeId() {
    return node.nodeId();
  }

  @Override
  public Vertx vertx() {
    return vertx;
  }

  @Override
  public <T> ActorCreation<T> actor(ActorFactory0<T> constructor) {
    return creator.creation(constructor, new Object[0]);
  }

  @Override
  public <A, T> ActorCreation<T> actor(ActorFactory1<A, T> constructor, A a) {
    return creator.creation(constructor, new Object[] {a});
  }

  @Override
  public <A, B, T> ActorCreation<T> actor(ActorFactory2<A, B, T> constructor, A a, B b) {
    return creator.creation(constructor, new Object[] {a, b});
  }

  @Override
  public <A, B, C, T> ActorCreation<T> actor(ActorFactory3<A, B, C, T> constructor, A a, B b, C c) {
    return creator.creation(constructor, new Object[] {a, b, c});
  }

  @Override
  public <T> CompletionStage<ActorHandle<T>> getActor(String namespace, String name, Class<T> type) {
    String key = ActorRecord.key(namespace, name);
    return registry.await(key, r -> r.state() != ActorState.PENDING).thenApply(rec -> {
      if (rec.isEmpty()) {
        throw new ActorNotFoundException("no live actor named " + key);
      }
      return handle(rec.get().actorId(), namespace, name, rec.get().nodeId(), type);
    });
  }

  <T> ActorHandle<T> handle(String actorId, String namespace, String name, String nodeId, Class<T> type) {
    return new ActorHandleImpl<>(this, actorId, namespace, name, nodeId, type, ActorHandle.DEFAULT_CALL_TIMEOUT);
  }

  @Override
  public CompletionStage<Void> kill(ActorHandle<?> actor, boolean allowRestart) {
    JsonObject cmd = new JsonObject().put("op", "kill").put("actorId", actor.actorId())
        .put("allowRestart", allowRestart).put("cause", allowRestart ? "killed (restart allowed)" : "killed");
    return request(actor.nodeId(), NodeAgent.address(actor.nodeId()), cmd, Void.class, CONTROL);
  }

  @Override
  public <R> TaskCreation<R> task(TaskFunction0<R> fn) {
    return new TaskSubmitter<>(this, fn, List.of());
  }

  @Override
  public <A, R> TaskCreation<R> task(TaskFunction1<A, R> fn, A a) {
    return new TaskSubmitter<>(this, fn, List.of(CompletableFuture.completedFuture(a)));
  }

  @Override
  public <A, R> TaskCreation<R> task(TaskFunction1<A, R> fn, CompletionStage<? extends A> a) {
    return new TaskSubmitter<>(this, fn, List.of(a));
  }

  @Override
  public <A, B, R> TaskCreation<R> task(TaskFunction2<A, B, R> fn, A a, B b) {
    return new TaskSubmitter<>(this, fn, List.of(CompletableFuture.completedFuture(a),
        CompletableFuture.completedFuture(b)));
  }

  @Override
  public <A, B, R> TaskCreation<R> task(TaskFunction2<A, B, R> fn, CompletionStage<? extends A> a,
                                        CompletionStage<? extends B> b) {
    return new TaskSubmitter<>(this, fn, List.of(a, b));
  }

  @Override
  public <A, B, C, R> TaskCreation<R> task(TaskFunction3<A, B, C, R> fn, A a, B b, C c) {
    return new TaskSubmitter<>(this, fn, List.of(CompletableFuture.completedFuture(a),
        CompletableFuture.completedFuture(b), CompletableFuture.completedFuture(c)));
  }

  @Override
  public CompletionStage<List<ActorInfo>> namedActors() {
    return registry.all().thenApply(list -> list.stream().map(ActorRecord::toInfo).toList());
  }

  @Override
  public List<ActorInfo> localActors() {
    return agent.actors();
  }

  @Override
  public <S> void registerLocalService(Class<S> type, S service) {
    localServices.put(type, service);
  }

  @Override
  public <S> Optional<S> localService(Class<S> type) {
    return Optional.ofNullable(type.cast(localServices.get(type)));
  }

  @Override
  public ClusterView clusterView() {
    List<NodeView> views = new ArrayList<>();
    for (NodeView v : nodeTable.views()) {
      if (v.nodeId().equals(node.nodeId())) {
        // Our own ledger is fresher than the row we last published.
        views.add(localNode());
      } else {
        views.add(v);
      }
    }
    if (views.stream().noneMatch(v -> v.nodeId().equals(node.nodeId()))) {
      views.add(localNode());
    }
    return new ClusterView(node.nodeId(), views);
  }

  @Override
  public NodeView localNode() {
    NodeRecord row = nodeTable.row(node.nodeId());
    String address = row == null ? node.host() : row.toView(true).address();
    return new NodeView(node.nodeId(), address, agent.ledger().total(), agent.ledger().available(), node.labels(),
        !stopped);
  }

  @Override
  public CompletionStage<Void> shutdown() {
    if (stopped) {
      return CompletableFuture.completedFuture(null);
    }
    stopped = true;
    return agent.shutdown()
        .compose(v -> Future.fromCompletionStage(removeOwnRecords()))
        .compose(v -> Future.fromCompletionStage(nodeTable.remove(node.nodeId())))
        .recover(e -> Future.succeededFuture())
        .compose(v -> Future.fromCompletionStage(backend.leave()))
        .compose(v -> onShutdown.get())
        .toCompletionStage();
  }

  /**
   * Stops this node abruptly, as if its process died: actors stop answering, nothing is cleaned up. Only
   * for simulating crashes in one process ({@code LocalCluster.crash}).
   */
  public void crash() {
    stopped = true;
    agent.abandon();
  }

  // ---- calls (see CallPath) ------------------------------------------------------------------------

  <R> CompletionStage<R> invoke(ActorHandleImpl<?> h, Serializable fn, Object[] args) {
    return callPath.invoke(h, fn, args);
  }

  static boolean actorGone(Throwable cause) {
    return CallPath.actorGone(cause);
  }

  CompletionStage<ActorInfo> actorInfo(String actorId, String nodeId) {
    return callPath.actorInfo(actorId, nodeId);
  }

  <R> CompletionStage<R> request(String nodeId, String address, Object body, Type resultType, DeliveryOptions opts) {
    return callPath.request(nodeId, address, body, resultType, opts);
  }

  // ---- membership ---------------------------------------------------------------------------------

  private final class Membership implements MembershipListener {
    @Override
    public void memberLeft(String memberId) {
      LOG.info("node {} left the cluster", memberId);
      calls.nodeDied(memberId);
      agent.nodeDied(memberId);
      placer.resourcesChanged();
      if (backend.isLeader()) {
        repairRegistry();
      }
    }

    @Override
    public void leaderChanged(boolean isLeader) {
      if (isLeader) {
        LOG.info("node {} is now the leader", node.nodeId());
        repairRegistry();
      }
    }
  }

  /**
   * Leader duty: drop registry entries of nodes that are no longer members, freeing names of actors
   * that died with their node. Only the leader does this, so two nodes never both repair. Node rows of
   * dead nodes stay (shown as not alive) until the node rejoins or is removed by an operator.
   */
  void repairRegistry() {
    List<String> members = backend.members();
    registry.rawEntries().thenAccept(entries -> entries.forEach((key, json) -> {
      ActorRecord rec = ActorRegistry.decode(json);
      String home = rec.nodeId() != null ? rec.nodeId() : rec.creatorNodeId();
      if (home != null && !members.contains(home)) {
        if (rec.nodeId() != null && rec.relocatable()) {
          LOG.info("re-creating actor {} ({}) elsewhere: node {} is gone", key, rec.actorId(), home);
          creator.relocate(key, json, rec);
        } else {
          LOG.info("freeing name {} of actor {}: node {} is gone", key, rec.actorId(), home);
          registry.remove(key, json);
        }
      }
    }));
  }

  private CompletionStage<Void> removeOwnRecords() {
    return registry.rawEntries().thenCompose(entries -> {
      List<CompletableFuture<Boolean>> removals = new ArrayList<>();
      entries.forEach((key, json) -> {
        ActorRecord rec = ActorRegistry.decode(json);
        if (node.nodeId().equals(rec.nodeId())) {
          removals.add(registry.remove(key, json).toCompletableFuture());
        }
      });
      return CompletableFuture.allOf(removals.toArray(CompletableFuture[]::new));
    });
  }

  static String newId() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }

  Optional<String> currentActorId() {
    var ctx = CurrentActor.get();
    return ctx == null ? Optional.empty() : Optional.of(ctx.actorId());
  }
}
