package io.kiln.serve.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.runtime.impl.WireCodec;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.runtime.spi.cluster.SharedMap;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.SpecJson;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Desired deployments ({@code kiln.deployments}, written through the management API) and their observed
 * status ({@code kiln.deployment-status}, written by the leader's controller), both in the cluster's
 * shared maps and mirrored on every node so the gateway reads them without a round trip.
 */
public final class DesiredState {

  public static final String DEPLOYMENTS = "kiln.deployments";
  public static final String STATUS = "kiln.deployment-status";

  /**
   * One desired deployment.
   *
   * @param generation bumped on every apply, so the controller can tell a re-deploy from what it saw
   * @param deleting set by {@code kiln delete}: drain the pools, then drop the entry
   */
  public record Desired(DeploymentSpec spec, long generation, boolean deleting) {
  }

  private static final ObjectMapper JSON = WireCodec.json();

  private final SharedMap deployments;
  private final SharedMap status;
  private final Map<String, Desired> desired = new ConcurrentHashMap<>();
  private final Map<String, DeploymentStatus> observed = new ConcurrentHashMap<>();
  private final CopyOnWriteArrayList<Runnable> listeners = new CopyOnWriteArrayList<>();

  public DesiredState(ClusterBackend cluster) {
    this.deployments = cluster.map(DEPLOYMENTS);
    this.status = cluster.map(STATUS);
    deployments.addListener((k, v) -> {
      if (v == null) {
        desired.remove(k);
      } else {
        desired.put(k, decode(v));
      }
      listeners.forEach(Runnable::run);
    });
    status.addListener((k, v) -> {
      if (v == null) {
        observed.remove(k);
      } else {
        observed.put(k, WireCodec.fromJson(v, DeploymentStatus.class));
      }
    });
  }

  /** Loads both maps once; listeners keep the mirrors current afterwards. */
  public CompletionStage<Void> load() {
    return deployments.entries().thenAccept(m -> m.forEach((k, v) -> desired.put(k, decode(v))))
        .thenCompose(v -> status.entries())
        .thenAccept(m -> m.forEach((k, v) -> observed.put(k, WireCodec.fromJson(v, DeploymentStatus.class))));
  }

  /** Called (off the caller's thread) whenever the desired deployments change. */
  public void onChange(Runnable listener) {
    listeners.add(listener);
  }

  public Map<String, Desired> desired() {
    return Map.copyOf(desired);
  }

  public Optional<Desired> desired(String name) {
    return Optional.ofNullable(desired.get(name));
  }

  public Map<String, DeploymentStatus> statuses() {
    return Map.copyOf(observed);
  }

  public Optional<DeploymentStatus> status(String name) {
    return Optional.ofNullable(observed.get(name));
  }

  /** Stores a deployment as desired, with the next generation. */
  public CompletionStage<Desired> apply(DeploymentSpec spec) {
    Desired previous = desired.get(spec.name());
    Desired next = new Desired(spec, previous == null ? 1 : previous.generation() + 1, false);
    desired.put(spec.name(), next);
    return deployments.put(spec.name(), encode(next)).thenApply(v -> next);
  }

  /** Marks a deployment for removal; false if there is no such deployment. */
  public CompletionStage<Boolean> markDeleting(String name) {
    Desired d = desired.get(name);
    if (d == null) {
      return java.util.concurrent.CompletableFuture.completedFuture(false);
    }
    Desired next = new Desired(d.spec(), d.generation() + 1, true);
    desired.put(name, next);
    return deployments.put(name, encode(next)).thenApply(v -> true);
  }

  public CompletionStage<Void> forget(String name) {
    desired.remove(name);
    observed.remove(name);
    return deployments.remove(name).thenCompose(v -> status.remove(name));
  }

  public CompletionStage<Void> putStatus(DeploymentStatus s) {
    observed.put(s.name(), s);
    return status.put(s.name(), WireCodec.toJson(s));
  }

  private static String encode(Desired d) {
    ObjectNode o = JSON.createObjectNode();
    o.put("generation", d.generation());
    o.put("deleting", d.deleting());
    o.set("spec", SpecJson.toTree(d.spec()));
    return o.toString();
  }

  private static Desired decode(String json) {
    try {
      JsonNode n = JSON.readTree(json);
      return new Desired(SpecJson.fromJson(n.get("spec").toString()), n.path("generation").asLong(),
          n.path("deleting").asBoolean());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
