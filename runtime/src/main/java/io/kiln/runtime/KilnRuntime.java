package io.kiln.runtime;

import io.kiln.runtime.function.ActorFactory0;
import io.kiln.runtime.function.ActorFactory1;
import io.kiln.runtime.function.ActorFactory2;
import io.kiln.runtime.function.ActorFactory3;
import io.kiln.runtime.function.TaskFunction0;
import io.kiln.runtime.function.TaskFunction1;
import io.kiln.runtime.function.TaskFunction2;
import io.kiln.runtime.function.TaskFunction3;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * One node of Kiln's actor runtime: creates actors and tasks, finds named actors, and exposes the cluster
 * view that placement decisions are made on, its membership and its typed shared stores. The same interface runs in one process (in-memory cluster,
 * for single-node use and fast tests) or clustered through Hazelcast.
 *
 * <p>All methods are thread-safe and non-blocking; they return futures that complete on Vert.x threads.
 * Do not block inside their continuations on an event loop.
 */
public interface KilnRuntime extends AutoCloseable {

  String nodeId();

  Vertx vertx();

  <T> ActorCreation<T> actor(ActorFactory0<T> constructor);

  <A, T> ActorCreation<T> actor(ActorFactory1<A, T> constructor, A a);

  <A, B, T> ActorCreation<T> actor(ActorFactory2<A, B, T> constructor, A a, B b);

  <A, B, C, T> ActorCreation<T> actor(ActorFactory3<A, B, C, T> constructor, A a, B b, C c);

  /**
   * Finds a live named actor from any node.
   *
   * @return a future failing with {@link ActorNotFoundException} if no live actor has the name
   */
  <T> CompletionStage<ActorHandle<T>> getActor(String namespace, String name, Class<T> type);

  /**
   * Kills an actor. With {@code allowRestart} and restarts left it is re-created (its constructor runs
   * again); otherwise it dies and its name is freed. Calls in progress fail with
   * {@link ActorDiedException} unless they have task retries left.
   */
  CompletionStage<Void> kill(ActorHandle<?> actor, boolean allowRestart);

  <R> TaskCreation<R> task(TaskFunction0<R> fn);

  <A, R> TaskCreation<R> task(TaskFunction1<A, R> fn, A a);

  /** A task whose argument is the result of another future (e.g. another task), resolved before dispatch. */
  <A, R> TaskCreation<R> task(TaskFunction1<A, R> fn, CompletionStage<? extends A> a);

  <A, B, R> TaskCreation<R> task(TaskFunction2<A, B, R> fn, A a, B b);

  <A, B, R> TaskCreation<R> task(TaskFunction2<A, B, R> fn, CompletionStage<? extends A> a,
                                 CompletionStage<? extends B> b);

  <A, B, C, R> TaskCreation<R> task(TaskFunction3<A, B, C, R> fn, A a, B b, C c);

  /**
   * Creates a placement group: writes it PENDING into the cluster's group table and returns its handle; the
   * leader then reserves its bundles all or none (see {@link PlacementGroup#ready()}).
   *
   * @return a future failing with {@link PlacementGroupException} if the name is taken
   */
  CompletionStage<PlacementGroup> placementGroup(PlacementGroupOptions options);

  /**
   * Finds a placement group by name from any node.
   *
   * @return a future failing with {@link PlacementGroupNotFoundException} if none has the name
   */
  CompletionStage<PlacementGroup> getPlacementGroup(String namespace, String name);

  /** Placement groups known to the cluster, with their states and bundle→node tables. */
  CompletionStage<List<PlacementGroupInfo>> placementGroups();

  /** Named actors known to the cluster, with their states. */
  CompletionStage<List<ActorInfo>> namedActors();

  /** Actors hosted on this node (named or not), including recently dead ones. */
  List<ActorInfo> localActors();

  /**
   * Registers a node-local service (not shared with the cluster) that actors on this node can find with
   * {@link #localService}, e.g. the node's metrics registry. Replaces any earlier one of the same type.
   */
  <S> void registerLocalService(Class<S> type, S service);

  /** A node-local service registered with {@link #registerLocalService}. */
  <S> java.util.Optional<S> localService(Class<S> type);

  /**
   * Ids of the cluster's live members, this node included, as this node sees them now (answered from
   * local state, never blocks). A node that crashed leaves this list within the failure-detection timeout.
   */
  List<String> members();

  /**
   * Whether this node is the cluster's leader (the oldest live member), which runs cluster-wide duties.
   * Exactly one live member is leader once membership has settled. Answered from local state.
   */
  boolean isLeader();

  /**
   * Tells {@code listener} of every later membership change and leadership change of this node. Listeners
   * run off the caller's thread, in order, after the runtime's own bookkeeping (requests to a node that
   * left have already failed), and must not block.
   */
  void addMembershipListener(MembershipListener listener);

  /**
   * The cluster-wide store {@code name} with values encoded as {@link WireCodec} JSON of {@code type}.
   * Opening a store is cheap and local; every node opening the same name sees the same entries.
   */
  <V> SharedStore<V> store(String name, Class<V> type);

  /** The cluster-wide store {@code name} with values in {@code codec}'s stored form. */
  <V> SharedStore<V> store(String name, StoreCodec<V> codec);

  /**
   * Where split-brain protection would refuse a write to store {@code name} now (the store is protected and this node
   * sees fewer members than the minimum cluster size), the refusal, to fail a request before its first read rather
   * than on its first write: on the smaller side of a partition a read may find nothing (the partition holding the
   * entry is on the other side) and answer a misleading 404. Empty otherwise. Answered from local state; the write
   * itself stays the guard (membership may change in between).
   */
  Optional<BelowMinimumClusterSizeException> writeRefusal(String name);

  /**
   * Publishes a service of this node in its node-table row (the gateway advertises {@code http} and
   * {@code grpc} ports), so other nodes and {@code kiln status} can find it.
   */
  void advertise(String service, String value);

  /** The node table as this node sees it now. */
  ClusterView clusterView();

  /** This node's own row: total and available resources, labels. */
  NodeView localNode();

  /**
   * Stops the node: kills the actors it hosts (their names are freed), leaves the cluster, closes Vert.x.
   * Completes when done.
   */
  CompletionStage<Void> shutdown();

  /** Blocking {@link #shutdown()}, for try-with-resources in tests and mains. */
  @Override
  default void close() {
    shutdown().toCompletableFuture().join();
  }
}
