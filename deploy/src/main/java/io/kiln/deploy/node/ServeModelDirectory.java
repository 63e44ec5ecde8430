package io.kiln.deploy.node;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.pools.ModelSpec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Models as the serve controller knows them: every desired deployment, resolved to the version that serves
 * it now (during a rolling update, the old one until the new one is ready everywhere). Reads the
 * controller's node-local mirrors only, so it never blocks.
 */
public final class ServeModelDirectory implements ModelDirectory {

  private final ServeController serve;
  private final io.kiln.pools.PoolLoadBoard board; // null: repository models never read as loaded
  /**
   * The last answer for each name's serving version, with the spec and status it was made of: while the
   * controller's mirrors hold those same objects the answer stands (a request does not build the model's
   * info and signature again).
   */
  private final java.util.concurrent.ConcurrentHashMap<String, Served> served =
      new java.util.concurrent.ConcurrentHashMap<>();

  private record Served(DeploymentSpec spec, DeploymentStatus status, Optional<ModelInfo> info) {
  }

  public ServeModelDirectory(ServeController serve) {
    this(serve, null);
  }

  /** @param board where a multiplexed deployment's pools report the models they hold loaded */
  public ServeModelDirectory(ServeController serve, io.kiln.pools.PoolLoadBoard board) {
    this.serve = serve;
    this.board = board;
  }

  @Override
  public List<ModelInfo> models() {
    List<ModelInfo> out = new ArrayList<>();
    serve.desired().forEach((name, spec) -> {
      model(name, null).ifPresent(out::add);
      if (spec.multiplexed()) {
        spec.repository().names().forEach(m -> model(m, null).ifPresent(out::add));
      }
    });
    return out;
  }

  @Override
  public Optional<ModelInfo> model(String name, String versionOrNull) {
    // One key each, no copies of the whole maps: this runs on every request.
    DeploymentSpec spec = name == null ? null : serve.desired(name).orElse(null);
    if (spec == null) {
      return repositoryModel(name, versionOrNull);
    }
    DeploymentStatus status = serve.status(name).orElse(null);
    if (status != null && status.phase() == DeploymentStatus.Phase.DELETING) {
      return Optional.empty();
    }
    if (versionOrNull == null) {
      Served last = served.get(name);
      if (last != null && last.spec() == spec && last.status() == status) {
        return last.info();
      }
      Optional<ModelInfo> info = build(name, null, spec, status);
      served.put(name, new Served(spec, status, info));
      return info;
    }
    return build(name, versionOrNull, spec, status);
  }

  @Override
  public String notReadyReason(String name) {
    DeploymentSpec spec = name == null ? null : serve.desired(name).orElse(null);
    if (spec == null) {
      Optional<DeploymentSpec> holder = serve.findDesired(d -> d.multiplexed() && d.repository().model(name).isPresent());
      return holder.map(h -> notReadyReason(h.name())).orElse(null);
    }
    DeploymentStatus status = serve.status(name).orElse(null);
    if (status == null) {
      return "deployment '" + name + "' has no status yet";
    }
    if (status.phase() == DeploymentStatus.Phase.FAILED && status.failure() != null) {
      return "deployment '" + name + "' FAILED: " + status.failure();
    }
    return "deployment '" + name + "' " + status.phase()
        + (status.message() != null && !status.message().isBlank() ? ": " + status.message() : "");
  }

  private static Optional<ModelInfo> build(String name, String versionOrNull, DeploymentSpec spec,
                                           DeploymentStatus status) {
    String serving = status == null ? null : status.servingVersion();
    // The versions, sorted (one or two of them).
    List<String> versions = serving == null || serving.equals(spec.version()) ? List.of(spec.version())
        : serving.compareTo(spec.version()) < 0 ? List.of(serving, spec.version()) : List.of(spec.version(), serving);
    String version = versionOrNull != null ? versionOrNull : serving != null ? serving : spec.version();
    if (!versions.contains(version)) {
      return Optional.empty();
    }
    boolean ready = serving != null && (versionOrNull == null || versionOrNull.equals(serving)
        || status.pools().stream().anyMatch(p -> p.version().equals(versionOrNull) && p.ready()));
    return Optional.of(new ModelInfo(name, version, versions, platform(spec),
        spec.model().signature(), ready, 0, null, config(spec)));
  }

  /** The platform strings Triton and KServe use for the same kinds of model, where they have one. */
  // A model of a multiplexed deployment's repository (a deployment of that name wins): the deployment's versions and
  // readiness, the model's own signature, loaded when a pool of the version reports it held.
  private Optional<ModelInfo> repositoryModel(String name, String versionOrNull) {
    // Runs for every request naming no deployment (repository models, unknown names): no copy of the desired state.
    Optional<DeploymentSpec> holder = serve.findDesired(d -> d.multiplexed() && d.repository().model(name).isPresent());
    if (holder.isPresent()) {
      DeploymentSpec spec = holder.get();
      Optional<ModelInfo> deployment = model(spec.name(), versionOrNull);
      if (deployment.isEmpty()) {
        return Optional.empty();
      }
      ModelInfo d = deployment.get();
      ModelSpec model = spec.repository().model(name).get();
      boolean loaded = board != null && board.pools(spec.name(), d.version()).stream()
          .anyMatch(p -> p.ready() && p.holds(name));
      return Optional.of(new ModelInfo(name, d.version(), d.versions(), platform(model), model.signature(), d.ready(),
          0, new ModelInfo.Multiplexed(spec.name(), loaded), d.config()));
    }
    return Optional.empty();
  }

  /** The deployment's batching and worker count, as {@code /v2/models/{m}/config} reports them. */
  private static ModelInfo.Config config(DeploymentSpec spec) {
    boolean perGpu = spec.pool().workers() instanceof io.kiln.serve.PoolPlacement.PerGpu;
    int count = spec.pool().workers() instanceof io.kiln.serve.PoolPlacement.PerGpu g ? g.count()
        : spec.pool().workers() instanceof io.kiln.serve.PoolPlacement.PerNode n ? n.count() : 0;
    return new ModelInfo.Config(spec.batching().maxBatchSize(), spec.batching().maxBatchDelay().toNanos() / 1000,
        count, perGpu ? "KIND_GPU" : "KIND_CPU");
  }

  private static String platform(DeploymentSpec spec) {
    return platform(spec.model());
  }

  private static String platform(ModelSpec model) {
    return io.kiln.pools.spi.Engines.installed().get(model.engine()).platform(model);
  }
}
