package io.kiln.control.impl;

import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.gateway.spi.PoolStatus;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The OIP model-repository extension's three operations, whatever the transport. The index lists every model Kiln
 * serves: each deployment of one model, once per version it has (the desired one and, during a rollout, the one
 * still serving), and each model of a multiplexed deployment's {@code repository} (at the deployment's serving
 * version). Load and unload apply to repository models only (a plain deployment's pools are the controller's).
 * {@link io.kiln.control.RepositoryApi} serves them over HTTP, {@link io.kiln.control.RepositoryGrpc} over gRPC,
 * with the same answers and errors.
 *
 * <p><b>Errors</b> (the stages fail with): {@link InferenceException} NOT_FOUND for a model in no multiplexed
 * deployment; {@link CapacityExceededException} (UNAVAILABLE, with its retry-after) when the deployment has no ready
 * pool or its pool runs as many loads as allowed; the pool's own {@link InferenceException} (INTERNAL) when the model
 * failed to load.
 *
 * <p>Pools are read and called through the gateway's {@link PoolAdmin} port, as the request path reaches them
 * through its {@link io.kiln.gateway.spi.PoolDirectory}.
 *
 * <p><b>Threading:</b> any thread; nothing blocks (pool calls are actor calls).
 */
public final class RepositoryModels {

  /** One model of the index: state {@code READY}, {@code LOADING} or {@code UNAVAILABLE}; reason empty unless the last. */
  public record Entry(String name, String version, String state, String reason, String deployment) {
  }

  private static final Duration RETRY_AFTER = Duration.ofSeconds(1);

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final PoolAdmin pools;

  public RepositoryModels(KilnRuntime runtime, ServeController serve, PoolAdmin pools) {
    this.runtime = runtime;
    this.serve = serve;
    this.pools = pools;
  }

  /** A multiplexed deployment's serving version and its pools' reports. */
  private record Served(DeploymentSpec spec, String version, List<PoolStatus> pools) {
  }

  private List<Served> multiplexed() {
    List<Served> out = new ArrayList<>();
    Map<String, DeploymentStatus> statuses = serve.statuses();
    serve.desired().forEach((name, spec) -> {
      if (spec.multiplexed()) {
        DeploymentStatus st = statuses.get(name);
        String version = st != null && st.servingVersion() != null ? st.servingVersion() : spec.version();
        out.add(new Served(spec, version, pools.status(name, version)));
      }
    });
    return out;
  }

  /**
   * Every model (only the READY ones when {@code readyOnly}), deployment by deployment in the controller's order;
   * never fails.
   */
  public CompletionStage<List<Entry>> index(boolean readyOnly) {
    List<CompletableFuture<List<Entry>>> parts = new ArrayList<>();
    Map<String, DeploymentStatus> statuses = serve.statuses();
    serve.desired().forEach((name, spec) -> {
      DeploymentStatus st = statuses.get(name);
      if (st != null && st.phase() == DeploymentStatus.Phase.DELETING) {
        return; // no longer served (the model directory hides it too)
      }
      if (spec.multiplexed()) {
        String version = st != null && st.servingVersion() != null ? st.servingVersion() : spec.version();
        parts.add(states(new Served(spec, version, pools.status(name, version))));
      } else {
        parts.add(CompletableFuture.completedFuture(versions(spec, st)));
      }
    });
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).handle((v, e) -> {
      List<Entry> all = new ArrayList<>();
      parts.forEach(p -> all.addAll(p.join()));
      return readyOnly ? all.stream().filter(m -> "READY".equals(m.state())).toList() : all;
    });
  }

  // A deployment of one model: READY where a pool of the version is ready on the board; LOADING while the controller
  // still brings it up; UNAVAILABLE with the controller's reason otherwise.
  private List<Entry> versions(DeploymentSpec spec, DeploymentStatus st) {
    List<String> versions = new ArrayList<>();
    if (st != null && st.servingVersion() != null && !st.servingVersion().equals(spec.version())) {
      versions.add(st.servingVersion());
    }
    versions.add(spec.version());
    versions.sort(Comparator.naturalOrder());
    List<Entry> out = new ArrayList<>();
    for (String v : versions) {
      boolean ready = pools.status(spec.name(), v).stream().anyMatch(PoolStatus::ready);
      String state;
      String reason = "";
      if (ready) {
        state = "READY";
      } else if (st == null || st.phase() == DeploymentStatus.Phase.DEPLOYING
          || st.phase() == DeploymentStatus.Phase.ROLLING && v.equals(spec.version())) {
        state = "LOADING";
      } else {
        state = "UNAVAILABLE";
        reason = st.phase() == DeploymentStatus.Phase.FAILED && v.equals(spec.version()) && st.failure() != null
            ? st.failure()
            : st.phase() == DeploymentStatus.Phase.UNSCHEDULABLE && st.message() != null ? st.message()
            : "no ready pool of deployment '" + spec.name() + "' version '" + v + "'";
      }
      out.add(new Entry(spec.name(), v, state, reason, spec.name()));
    }
    return out;
  }

  // Each model's state across the deployment's pools: READY wins over LOADING over UNAVAILABLE.
  private CompletableFuture<List<Entry>> states(Served s) {
    List<CompletableFuture<Map<String, String>>> calls = new ArrayList<>();
    for (PoolStatus p : s.pools()) {
      if (p.ready()) {
        calls.add(pools.models(s.spec().name(), s.version(), p.nodeId()).toCompletableFuture()
            .exceptionally(e -> Map.of()));
      }
    }
    return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).thenApply(v -> {
      List<Entry> out = new ArrayList<>();
      for (String name : s.spec().repository().names()) {
        String state = "UNAVAILABLE";
        for (CompletableFuture<Map<String, String>> c : calls) {
          String st = c.join().getOrDefault(name, "UNAVAILABLE");
          if (st.equals("READY") || st.equals("LOADING") && !state.equals("READY")) {
            state = st;
          }
        }
        String reason = state.equals("UNAVAILABLE")
            ? calls.isEmpty() ? "no ready pool of deployment '" + s.spec().name() + "'" : "not loaded" : "";
        out.add(new Entry(name, s.version(), state, reason, s.spec().name()));
      }
      return out;
    });
  }

  /** The multiplexed deployment whose repository holds {@code model}, if any. */
  public java.util.Optional<String> deploymentOf(String model) {
    return multiplexed().stream().filter(s -> s.spec().repository().model(model).isPresent())
        .map(s -> s.spec().name()).findFirst();
  }

  /**
   * Loads {@code model} onto a worker of its deployment's pool on this node, else of the least loaded ready pool;
   * completes once it is loaded.
   */
  public CompletionStage<Void> load(String model) {
    return control(model, true);
  }

  /** Closes {@code model} on every ready pool's workers that hold it; completes once they all did. */
  public CompletionStage<Void> unload(String model) {
    return control(model, false);
  }

  private CompletionStage<Void> control(String model, boolean load) {
    Served owner = null;
    for (Served s : multiplexed()) {
      if (s.spec().repository().model(model).isPresent()) {
        owner = s;
        break;
      }
    }
    if (owner == null) {
      return CompletableFuture.failedFuture(new InferenceException(InferenceException.Kind.NOT_FOUND,
          "model '" + model + "' is in no model repository"));
    }
    Served s = owner;
    List<PoolStatus> ready = s.pools().stream().filter(PoolStatus::ready).toList();
    if (ready.isEmpty()) {
      return CompletableFuture.failedFuture(new CapacityExceededException(
          "no ready pool of deployment '" + s.spec().name() + "'", RETRY_AFTER));
    }
    if (load) {
      PoolStatus target = ready.stream().filter(p -> p.nodeId().equals(runtime.nodeId())).findFirst()
          .orElseGet(() -> ready.stream().min(Comparator.comparingLong(PoolStatus::load)).orElseThrow());
      return pools.loadModel(s.spec().name(), s.version(), target.nodeId(), model).thenApply(v -> null);
    }
    List<CompletableFuture<Integer>> calls = new ArrayList<>();
    ready.forEach(p -> calls.add(pools.unloadModel(s.spec().name(), s.version(), p.nodeId(), model)
        .toCompletableFuture()));
    return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new));
  }
}
