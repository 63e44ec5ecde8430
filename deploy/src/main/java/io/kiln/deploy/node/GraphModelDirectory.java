package io.kiln.deploy.node;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.pipelines.graphs.Graphs;
import io.kiln.serve.GraphSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The served models and, beside them, the model graphs ({@link Graphs}): a graph reads to the gateway as one model of
 * its own name (platform {@value #PLATFORM}, Triton's for an ensemble) whose signature is the graph's declared inputs
 * and outputs, ready while some node runs a ready pool of every step's deployment, at its one version. A deployment of
 * the same name wins (the apply operation refuses to make one, but a deployment applied around it could). Requests for
 * a graph go to {@link PoolsDirectory}, which runs it. Thread-safe and non-blocking: the graphs are a node-local
 * mirror, and a graph's info is built again only when its spec is replaced.
 */
final class GraphModelDirectory implements ModelDirectory {

  /** The OIP platform of a graph: Triton's word for an ensemble. */
  static final String PLATFORM = "ensemble";

  private final ModelDirectory served;
  private final Graphs graphs;
  /** Per graph, its info as last built, with the spec it was built of (readiness is read on every lookup). */
  private final ConcurrentHashMap<String, Built> built = new ConcurrentHashMap<>();

  private record Built(GraphSpec spec, ModelInfo info) {
  }

  GraphModelDirectory(ModelDirectory served, Graphs graphs) {
    this.served = served;
    this.graphs = graphs;
  }

  @Override
  public List<ModelInfo> models() {
    List<ModelInfo> out = new ArrayList<>(served.models());
    for (String name : graphs.names()) {
      if (served.model(name, null).isEmpty()) {
        graph(name, null).ifPresent(out::add);
      }
    }
    return out;
  }

  @Override
  public Optional<ModelInfo> model(String name, String versionOrNull) {
    Optional<ModelInfo> m = served.model(name, versionOrNull);
    return m.isPresent() ? m : graph(name, versionOrNull);
  }

  /** Whether requests for {@code name} go to a graph: a graph of that name and no deployment of it. */
  boolean isGraph(String name) {
    return graphs.graph(name).isPresent() && served.model(name, null).isEmpty();
  }

  private Optional<ModelInfo> graph(String name, String versionOrNull) {
    GraphSpec spec = graphs.graph(name).orElse(null);
    if (spec == null || (versionOrNull != null && !versionOrNull.equals(spec.version()))) {
      return Optional.empty();
    }
    Built b = built.get(name);
    if (b == null || b.spec() != spec) {
      b = new Built(spec, new ModelInfo(name, spec.version(), List.of(spec.version()), PLATFORM, spec.signature(),
          false, 0));
      built.put(name, b);
    }
    return Optional.of(b.info().withReady(graphs.ready(name)));
  }

  @Override
  public String notReadyReason(String name) {
    String reason = served.notReadyReason(name);
    return reason != null || !isGraph(name) ? reason : graphs.notReadyReason(name);
  }

  @Override
  public boolean internal(String name) {
    return served.internal(name);
  }

  @Override
  public boolean servesWhileHeld(String name) {
    return served.servesWhileHeld(name);
  }
}
