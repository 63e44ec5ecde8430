package io.kiln.deploy.node;

import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The cluster as one node sees it, for dashboards and alerts: {@code kiln.cluster.nodes} (gauge, alive nodes in
 * the node table) and {@code kiln.deployment.phase} {@code {deployment, phase}}, 1 for each deployment's current
 * phase and 0 for its other {@link DeploymentStatus.Phase phases} (lower case), from the node's mirror of the
 * deployment statuses (every node exports the same: aggregate with {@code max by (deployment, phase)}). The gauges
 * read the mirror when scraped. Every {@link #PERIOD_MS} ms the node's event loop compares the deployments' names
 * with the gauges it has and registers or removes the difference only: touching the registry when nothing changed
 * (re-registering every gauge each period, as a MultiGauge with overwrite does) measurably slowed the request
 * path's admission (OverloadTest: 3–4× the pool-side rejections).
 */
final class ClusterMeters implements AutoCloseable {

  static final long PERIOD_MS = 2_000;

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final MeterRegistry registry;
  private final Gauge nodes;
  private final Map<String, List<Gauge>> phases = new HashMap<>(); // guarded by this
  private final long timer;
  private boolean closed; // guarded by this

  private ClusterMeters(KilnRuntime runtime, ServeController serve, MeterRegistry registry) {
    this.runtime = runtime;
    this.serve = serve;
    this.registry = registry;
    this.nodes = Gauge.builder("kiln.cluster.nodes", runtime, r -> r.clusterView().aliveNodes().size())
        .description("Alive nodes in the cluster, as this node sees it").strongReference(true).register(registry);
    refresh();
    this.timer = runtime.vertx().setPeriodic(PERIOD_MS, id -> refresh());
  }

  static ClusterMeters register(KilnRuntime runtime, ServeController serve, MeterRegistry registry) {
    return new ClusterMeters(runtime, serve, registry);
  }

  private synchronized void refresh() {
    if (closed) {
      return;
    }
    Set<String> names = serve.statuses().keySet();
    if (names.equals(phases.keySet())) {
      return;
    }
    phases.keySet().removeIf(name -> {
      if (names.contains(name)) {
        return false;
      }
      phases.get(name).forEach(registry::remove);
      return true;
    });
    for (String name : names) {
      phases.computeIfAbsent(name, this::register);
    }
  }

  private List<Gauge> register(String deployment) {
    List<Gauge> gauges = new ArrayList<>();
    for (DeploymentStatus.Phase p : DeploymentStatus.Phase.values()) {
      gauges.add(Gauge.builder("kiln.deployment.phase", serve,
              s -> s.status(deployment).map(st -> st.phase() == p ? 1.0 : 0.0).orElse(Double.NaN))
          .description("1 for a deployment's current phase, 0 for its others (from this node's mirror of the status)")
          .tags(Tags.of("deployment", deployment, "phase", p.name().toLowerCase(Locale.ROOT)))
          .strongReference(true).register(registry));
    }
    return gauges;
  }

  /** Stops the refresh and removes the meters; idempotent. */
  @Override
  public synchronized void close() {
    closed = true;
    runtime.vertx().cancelTimer(timer);
    phases.values().forEach(gauges -> gauges.forEach(registry::remove));
    phases.clear();
    registry.remove(nodes);
  }
}
