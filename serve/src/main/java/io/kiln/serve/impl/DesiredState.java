package io.kiln.serve.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SharedStore;
import io.kiln.runtime.StoreCodec;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.SpecJson;
import java.io.IOException;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Desired deployments ({@code kiln.deployments}, written through the management API of any node) and their
 * observed status ({@code kiln.deployment-status}, written by the leader's controller), both in the
 * cluster's shared stores and mirrored on every node so that the gateway reads them without a round trip.
 *
 * <p>Writes to the desired map are compare-and-set on the entry, so concurrent applies and deletes from
 * different nodes each get their own generation and none is lost; removing a deleted deployment only
 * succeeds if nobody re-applied it meanwhile. Mirrors follow the maps' change events (in order) and are
 * updated at once by this node's own writes, so a caller reads what it just wrote. Thread-safe.
 */
public final class DesiredState {

  private static final Logger LOG = LoggerFactory.getLogger(DesiredState.class);

  public static final String DEPLOYMENTS = "kiln.deployments";
  public static final String STATUS = "kiln.deployment-status";

  /**
   * One desired deployment.
   *
   * @param generation bumped on every apply and delete, so the controller can tell a re-deploy from what it saw
   * @param deleting set by {@code kiln delete}: drain the pools, then drop the entry
   */
  public record Desired(DeploymentSpec spec, long generation, boolean deleting) {
  }

  private static final ObjectMapper JSON = WireCodec.json();

  /** The stored form of a desired deployment: its spec as {@link SpecJson}'s tree, beside generation and flag. */
  private static final StoreCodec<Desired> CODEC = new StoreCodec<>() {
    @Override
    public String encode(Desired d) {
      return DesiredState.encode(d);
    }

    @Override
    public Desired decode(String json) {
      try {
        JsonNode n = JSON.readTree(json);
        return new Desired(SpecJson.fromJson(n.get("spec").toString()), n.path("generation").asLong(),
            n.path("deleting").asBoolean());
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  };

  private final SharedStore<Desired> deployments;
  private final SharedStore<DeploymentStatus> status;
  private final Map<String, SharedStore.Entry<Desired>> desired = new ConcurrentHashMap<>();
  private final Map<String, DeploymentStatus> observed = new ConcurrentHashMap<>();
  private final CopyOnWriteArrayList<Runnable> listeners = new CopyOnWriteArrayList<>();

  public DesiredState(KilnRuntime runtime) {
    this.deployments = runtime.store(DEPLOYMENTS, CODEC);
    this.status = runtime.store(STATUS, DeploymentStatus.class);
    deployments.addListener((k, e) -> {
      if (e == null) {
        desired.remove(k);
      } else {
        readable(e).ifPresent(d -> desired.put(k, e));
      }
      listeners.forEach(Runnable::run);
    });
    status.addListener((k, e) -> {
      if (e == null) {
        observed.remove(k);
      } else {
        readableStatus(e).ifPresent(s -> observed.put(k, s));
      }
    });
  }

  /** Loads both stores once; listeners keep the mirrors current afterwards. */
  public CompletionStage<Void> load() {
    return deployments.entries().thenAccept(m -> m.forEach((k, e) -> readable(e).ifPresent(d -> desired.put(k, e))))
        .thenCompose(v -> status.entries())
        .thenAccept(m -> m.forEach((k, e) -> readableStatus(e).ifPresent(s -> observed.put(k, s))));
  }

  /** Called (off the caller's thread) whenever the desired deployments change. */
  public void onChange(Runnable listener) {
    listeners.add(listener);
  }

  public Map<String, Desired> desired() {
    Map<String, Desired> out = new java.util.HashMap<>();
    desired.forEach((k, e) -> out.put(k, e.value()));
    return Map.copyOf(out);
  }

  /**
   * The matching desired deployment first by name (as in the sorted {@code desired()} views), read from the mirror
   * in place: no copy, since request paths call it.
   */
  public Optional<Desired> find(java.util.function.Predicate<Desired> test) {
    String first = null;
    Desired found = null;
    for (Map.Entry<String, SharedStore.Entry<Desired>> e : desired.entrySet()) {
      if ((first == null || e.getKey().compareTo(first) < 0) && test.test(e.getValue().value())) {
        first = e.getKey();
        found = e.getValue().value();
      }
    }
    return Optional.ofNullable(found);
  }

  public Optional<Desired> desired(String name) {
    return Optional.ofNullable(desired.get(name)).map(SharedStore.Entry::value);
  }

  public Map<String, DeploymentStatus> statuses() {
    return Map.copyOf(observed);
  }

  public Optional<DeploymentStatus> status(String name) {
    return Optional.ofNullable(observed.get(name));
  }

  /** Stores a deployment as desired, with the next generation. */
  public CompletionStage<Desired> apply(DeploymentSpec spec) {
    return update(spec.name(), previous -> new Desired(spec, previous == null ? 1 : previous.generation() + 1, false))
        .thenApply(Optional::orElseThrow);
  }

  /** Marks a deployment for removal; false if there is no such deployment. */
  public CompletionStage<Boolean> markDeleting(String name) {
    return update(name, previous -> previous == null ? null
        : new Desired(previous.spec(), previous.generation() + 1, true)).thenApply(Optional::isPresent);
  }

  /**
   * Compare-and-set of one entry: {@code change} maps the current value (null if none) to the next (null:
   * leave it absent); retried until no other writer raced it. Completes with what was stored.
   */
  private CompletionStage<Optional<Desired>> update(String name, UnaryOperator<Desired> change) {
    return deployments.get(name).thenCompose(current -> {
      // An entry that does not read is replaced by the next apply (compare-and-set on its stored form).
      Desired previous = current.flatMap(DesiredState::readable).orElse(null);
      Desired next = change.apply(previous);
      if (next == null) {
        return CompletableFuture.completedFuture(Optional.<Desired>empty());
      }
      CompletionStage<Boolean> written = current.isEmpty()
          ? deployments.putIfAbsent(name, next).thenApply(Optional::isEmpty)
          : deployments.replace(name, current.get(), next);
      return written.thenCompose(ok -> {
        if (!ok) {
          return update(name, change);
        }
        desired.put(name, SharedStore.Entry.of(DEPLOYMENTS, name, next, encode(next)));
        return CompletableFuture.completedFuture(Optional.of(next));
      });
    });
  }

  /**
   * Drops a deployment that finished deleting, and its status; does nothing (false) if the entry is no
   * longer {@code d} (it was re-applied meanwhile).
   */
  public CompletionStage<Boolean> forget(Desired d) {
    String name = d.spec().name();
    SharedStore.Entry<Desired> e = desired.get(name);
    if (e == null || !e.value().equals(d)) {
      return CompletableFuture.completedFuture(false);
    }
    return deployments.remove(name, e).thenCompose(removed -> {
      if (!removed) {
        return CompletableFuture.completedFuture(false);
      }
      desired.remove(name, e);
      observed.remove(name);
      return status.remove(name).thenApply(v -> true);
    });
  }

  public CompletionStage<Void> putStatus(DeploymentStatus s) {
    observed.put(s.name(), s);
    return status.put(s.name(), s);
  }

  private static String encode(Desired d) {
    ObjectNode o = JSON.createObjectNode();
    o.put("generation", d.generation());
    o.put("deleting", d.deleting());
    o.set("spec", SpecJson.toTree(d.spec()));
    return o.toString();
  }

  /** Entries come from other nodes (maybe other versions of Kiln): one that does not read is skipped, loudly. */
  private static Optional<Desired> readable(SharedStore.Entry<Desired> e) {
    try {
      return Optional.of(e.value());
    } catch (RuntimeException err) {
      LOG.error("desired deployment {} (in {}) does not read, ignoring it: {}", e.key(), DEPLOYMENTS,
          err.getCause() != null ? err.getCause().toString() : err.toString());
      return Optional.empty();
    }
  }

  private static Optional<DeploymentStatus> readableStatus(SharedStore.Entry<DeploymentStatus> e) {
    try {
      return Optional.of(e.value());
    } catch (RuntimeException err) {
      LOG.warn("status of deployment {} (in {}) does not read, ignoring it: {}", e.key(), STATUS,
          err.getCause() != null ? err.getCause().toString() : err.toString());
      return Optional.empty();
    }
  }
}
