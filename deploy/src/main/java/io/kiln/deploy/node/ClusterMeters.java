package io.kiln.deploy.node;

import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cluster as one node sees it, for dashboards and alerts: {@code kiln.cluster.nodes} (gauge, alive nodes in
 * the node table) and {@code kiln.deployment.phase} {@code {deployment, phase}}, 1 for each deployment's current
 * phase and 0 for its other {@link DeploymentStatus.Phase phases} (lower case), from the node's mirror of the
 * deployment statuses (every node exports the same: aggregate with {@code max by (deployment, phase)}). The
 * phases are re-read every {@link #PERIOD_MS} ms on the node's event loop (a scrape never waits for it);
 * deployments that are gone lose their series then.
 */
final class ClusterMeters implements AutoCloseable {

  static final long PERIOD_MS = 2_000;

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final MeterRegistry registry;
  private final Gauge nodes;
  private final MultiGauge phases;
  private final long timer;

  private ClusterMeters(KilnRuntime runtime, ServeController serve, MeterRegistry registry) {
    this.runtime = runtime;
    this.serve = serve;
    this.registry = registry;
    this.nodes = Gauge.builder("kiln.cluster.nodes", runtime, r -> r.clusterView().aliveNodes().size())
        .description("Alive nodes in the cluster, as this node sees it").strongReference(true).register(registry);
    this.phases = MultiGauge.builder("kiln.deployment.phase")
        .description("1 for a deployment's current phase, 0 for its others (from this node's mirror of the status)")
        .register(registry);
    refresh();
    this.timer = runtime.vertx().setPeriodic(PERIOD_MS, id -> refresh());
  }

  static ClusterMeters register(KilnRuntime runtime, ServeController serve, MeterRegistry registry) {
    return new ClusterMeters(runtime, serve, registry);
  }

  private void refresh() {
    Map<String, DeploymentStatus> statuses = serve.statuses();
    List<MultiGauge.Row<?>> rows = new ArrayList<>(statuses.size() * DeploymentStatus.Phase.values().length);
    statuses.forEach((name, status) -> {
      for (DeploymentStatus.Phase p : DeploymentStatus.Phase.values()) {
        rows.add(MultiGauge.Row.of(Tags.of("deployment", name, "phase", p.name().toLowerCase(Locale.ROOT)),
            status.phase() == p ? 1 : 0));
      }
    });
    phases.register(rows, true);
  }

  /** Stops the refresh and removes the meters; idempotent. */
  @Override
  public void close() {
    runtime.vertx().cancelTimer(timer);
    phases.register(List.of(), true);
    registry.remove(nodes);
  }
}
