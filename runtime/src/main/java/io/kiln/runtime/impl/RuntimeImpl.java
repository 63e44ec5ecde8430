package io.kiln.runtime.impl;

import io.kiln.runtime.ActorCreation;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorNotFoundException;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.ClusterView;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.SharedStore;
import io.kiln.runtime.StoreCodec;
import io.kiln.runtime.TaskCreation;
import io.kiln.runtime.TimeoutPolicy;
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
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime of one node. The same code runs single-node (in-memory cluster backend) and clustered
 * (Hazelcast backend, clustered event bus): everything is addressed by event-bus address and shared map,
 * never by object reference, so the only difference is whether messages are encoded.
 *
 * <p>This class composes the node's parts and forwards the public API to them; the parts get the narrow
 * collaborators they need and never call back into it: {@link NodeTable} and {@link ActorRegistry} (shared
 * maps) → {@link ClusterViews} → {@link Placer}; {@link LocalActors} → {@link CallPath} (requests, handles)
 * → {@link NodeAgent} (hosting), {@link ActorCreator}, {@link TaskSubmitter} → {@link RegistryJanitor}.
 */
public final class RuntimeImpl implements KilnRuntime {

  private static final Logger LOG = LoggerFactory.getLogger(RuntimeImpl.class);

  private final Vertx vertx;
  private final ClusterBackend backend;
  private final NodeOptions node;
  private final NodeTable nodeTable;
  private final ActorRegistry registry;
  private final ClusterViews views;
  private final LocalActors actorsHere;
  private final NodeAgent agent;
  private final Placer placer;
  private final CallTracker calls;
  private final Reachability reach;
  private final ActorCreator creator;
  private final CallPath callPath;
  private final RegistryJanitor janitor;
  private final PlacementGroupTable groupTable;
  private final PlacementGroups groups;
  private final GroupCoordinator groupCoordinator;
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
    this.reach = new Reachability(node.nodeId(), vertx, nodeTable, calls, backend::members, System::nanoTime);
    ResourceLedger ledger = new ResourceLedger(node.resources());
    this.views = new ClusterViews(node, nodeTable, ledger, backend::members);
    this.groupTable = new PlacementGroupTable(backend.map(GroupRecord.MAP), backend.map(GroupRecord.NAMES));
    // Placement into a bundle is decided by the group's row; everything else by the node index.
    this.placer = new Placer(vertx.getOrCreateContext(), this::place);
    this.actorsHere = new LocalActors();
    this.callPath = new CallPath(node.nodeId(), vertx, backend::members, calls, reach, registry, actorsHere);
    reach.pingWith(target -> callPath.ping(target, Reachability.PING_TIMEOUT_MS));
    // The one edge back: hosted actors and tasks are handed the runtime hosting them (ActorContext.runtime(),
    // TaskContext.runtime()), as the public interface only, stored and never called during construction.
    this.agent = new NodeAgent(this, vertx, node, ledger, actorsHere, registry, nodeTable, placer::resourcesChanged,
        callPath, groupTable);
    this.groups = new PlacementGroups(node.nodeId(), groupTable, callPath, backend::members, java.time.Clock.systemUTC(),
        placer::resourcesChanged);
    this.groupCoordinator = new GroupCoordinator(vertx.getOrCreateContext(), backend::isLeader, backend::members,
        groupTable, this::clusterView, groups, groups::remove, java.time.Clock.systemUTC());
    this.creator = new ActorCreator(node.nodeId(), registry, placer, callPath);
    this.janitor = new RegistryJanitor(node.nodeId(), backend, registry, creator);
  }

  /**
   * Starts a node on {@code vertx} (whose event bus is clustered when {@code backend} is). The node
   * drops registry entries a previous incarnation of its id left, registers its agent, publishes its row and
   * starts following membership.
   *
   * @param onShutdown run after the node has left (closes what the caller created for it)
   */
  public static Future<RuntimeImpl> start(Vertx vertx, ClusterBackend backend, NodeOptions node,
                                          Supplier<Future<Void>> onShutdown) {
    return start(vertx, backend, node, onShutdown, null);
  }

  /**
   * {@link #start(Vertx, ClusterBackend, NodeOptions, Supplier)} on a clustered event bus whose connections
   * {@code busLinks} reports (its metrics factory given to the Vert.x builder): this node advertises its bus address
   * in its row, and calls to a node whose bus connection breaks fail at once ({@link Reachability}). Null: no such
   * watch (an in-memory cluster has no connections).
   */
  public static Future<RuntimeImpl> start(Vertx vertx, ClusterBackend backend, NodeOptions node,
                                          Supplier<Future<Void>> onShutdown, BusLinks busLinks) {
    Codecs.register(vertx);
    RuntimeImpl rt = new RuntimeImpl(vertx, backend, node, onShutdown);
    if (busLinks != null && busLinks.localAddress() != null) {
      busLinks.listen(rt.reach);
    }
    backend.addMembershipListener(rt.new Membership());
    rt.nodeTable.onChange(rt.placer::resourcesChanged);
    rt.nodeTable.onChange(rt.groupCoordinator::kick);
    rt.groupTable.onChange(groupId -> {
      rt.agent.groupChanged();
      rt.groupCoordinator.kick();
      rt.placer.resourcesChanged();
    });
    return Future.fromCompletionStage(rt.nodeTable.load())
        .compose(v -> Future.fromCompletionStage(rt.groupTable.load()))
        // Entries naming this node id before it created anything are a previous incarnation's (a stable id, e.g.
        // a pod's name, back before the cluster noticed the old process die): its actors are gone.
        .compose(v -> Future.fromCompletionStage(rt.janitor.removeOwnRecords()))
        .compose(v -> {
          rt.views.resync();
          return rt.agent.start();
        })
        .map(v -> {
          if (busLinks != null && busLinks.localAddress() != null) {
            rt.agent.setService(Reachability.BUS_SERVICE, busLinks.localAddress());
          }
          rt.agent.publishRow();
          if (backend.isLeader()) {
            rt.janitor.repair();
          }
          rt.groupCoordinator.start();
          rt.groupCoordinator.kick();
          LOG.info("node {} started with {} on {}", node.nodeId(), node.resources(), node.host());
          return rt;
        });
  }

  /** Placement into a bundle is decided by the group's row; everything else by the node index. */
  private io.kiln.runtime.scheduling.Placement place(io.kiln.runtime.scheduling.PlacementRequest req) {
    return req.strategy() instanceof io.kiln.runtime.SchedulingStrategy.InPlacementGroup pg
        ? groups.placeInto(req.resources(), pg) : views.place(req);
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
  public Optional<BelowMinimumClusterSizeException> writeRefusal(String name) {
    int members = backend.members().size();
    return backend.isProtected(name) && members < backend.minClusterSize()
        ? Optional.of(new BelowMinimumClusterSizeException(name, backend.minClusterSize(), members, null))
        : Optional.empty();
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
        // A live actor here keeps its name where this side's registry lost the entry: on the smaller side of a
        // partition (the map's partition holding it was on the other side, or the other side freed it).
        ActorInfo here = agent.heldHere(key).orElseThrow(() -> new ActorNotFoundException("no live actor named " + key));
        return handle(here.actorId(), namespace, name, here.nodeId(), type);
      }
      return handle(rec.get().actorId(), namespace, name, rec.get().nodeId(), type);
    });
  }

  <T> ActorHandle<T> handle(String actorId, String namespace, String name, String nodeId, Class<T> type) {
    return callPath.handle(actorId, namespace, name, nodeId, type);
  }

  @Override
  public CompletionStage<Void> kill(ActorHandle<?> actor, boolean allowRestart) {
    JsonObject cmd = new JsonObject().put("op", "kill").put("actorId", actor.actorId())
        .put("allowRestart", allowRestart).put("cause", allowRestart ? "killed (restart allowed)" : "killed");
    return callPath.request(actor.nodeId(), NodeAgent.address(actor.nodeId()), cmd, Void.class, CallPath.CONTROL);
  }

  @Override
  public <R> TaskCreation<R> task(TaskFunction0<R> fn) {
    return new TaskSubmitter<>(placer, callPath, fn, List.of());
  }

  @Override
  public <A, R> TaskCreation<R> task(TaskFunction1<A, R> fn, A a) {
    return new TaskSubmitter<>(placer, callPath, fn, List.of(CompletableFuture.completedFuture(a)));
  }

  @Override
  public <A, R> TaskCreation<R> task(TaskFunction1<A, R> fn, CompletionStage<? extends A> a) {
    return new TaskSubmitter<>(placer, callPath, fn, List.of(a));
  }

  @Override
  public <A, B, R> TaskCreation<R> task(TaskFunction2<A, B, R> fn, A a, B b) {
    return new TaskSubmitter<>(placer, callPath, fn, List.of(CompletableFuture.completedFuture(a),
        CompletableFuture.completedFuture(b)));
  }

  @Override
  public <A, B, R> TaskCreation<R> task(TaskFunction2<A, B, R> fn, CompletionStage<? extends A> a,
                                        CompletionStage<? extends B> b) {
    return new TaskSubmitter<>(placer, callPath, fn, List.of(a, b));
  }

  @Override
  public <A, B, C, R> TaskCreation<R> task(TaskFunction3<A, B, C, R> fn, A a, B b, C c) {
    return new TaskSubmitter<>(placer, callPath, fn, List.of(CompletableFuture.completedFuture(a),
        CompletableFuture.completedFuture(b), CompletableFuture.completedFuture(c)));
  }

  @Override
  public CompletionStage<io.kiln.runtime.PlacementGroup> placementGroup(io.kiln.runtime.PlacementGroupOptions options) {
    return groups.create(options);
  }

  @Override
  public CompletionStage<io.kiln.runtime.PlacementGroup> getPlacementGroup(String namespace, String name) {
    return groups.byName(namespace, name);
  }

  @Override
  public CompletionStage<List<io.kiln.runtime.PlacementGroupInfo>> placementGroups() {
    return groups.list();
  }

  @Override
  public CompletionStage<List<ActorInfo>> namedActors() {
    return registry.all().thenApply(list -> list.stream().map(ActorRecord::toInfo).toList());
  }

  @Override
  public List<ActorInfo> localActors() {
    return actorsHere.all();
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
    return views.clusterView();
  }

  @Override
  public NodeView localNode() {
    return views.localNode();
  }

  @Override
  public CompletionStage<Void> shutdown() {
    return shutdown(TimeoutPolicy.LEAVE_CLEANUP);
  }

  /** {@link #shutdown()} with {@code cleanUpBound} on the clean-up of the cluster's maps (tests shorten it). */
  CompletionStage<Void> shutdown(TimeoutPolicy cleanUpBound) {
    if (stopped) {
      return CompletableFuture.completedFuture(null);
    }
    stopped = true;
    views.stopped();
    reach.stop();
    groupCoordinator.stop();
    return Leaving.run(node.nodeId(), cleanUpBound, agent::shutdown,
            () -> janitor.removeOwnRecords().thenCompose(v -> nodeTable.remove(node.nodeId())), backend::leave,
            onShutdown)
        .toCompletionStage();
  }

  /**
   * Stops this node abruptly, as if its process died: actors stop answering, nothing is cleaned up. Only
   * for simulating crashes in one process ({@code LocalCluster.crash}).
   */
  public void crash() {
    stopped = true;
    reach.stop();
    groupCoordinator.stop();
    views.stopped();
    agent.abandon();
  }

  // ---- membership ---------------------------------------------------------------------------------

  private final class Membership implements MembershipListener {
    @Override
    public void memberJoined(String memberId) {
      views.nodeChanged(memberId);
      agent.memberJoined();
    }

    @Override
    public void memberLeft(String memberId) {
      LOG.info("node {} left the cluster", memberId);
      views.nodeChanged(memberId);
      calls.nodeDied(memberId);
      reach.nodeLeft(memberId);
      agent.nodeDied(memberId);
      placer.resourcesChanged();
      if (backend.isLeader()) {
        janitor.repair();
      }
      groupCoordinator.kick();
    }

    @Override
    public void leaderChanged(boolean isLeader) {
      if (isLeader) {
        LOG.info("node {} is now the leader", node.nodeId());
        janitor.repair();
        groupCoordinator.kick();
      }
    }
  }
}
