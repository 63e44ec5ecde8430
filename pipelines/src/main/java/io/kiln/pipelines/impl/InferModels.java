package io.kiln.pipelines.impl;

import io.kiln.pools.ModelSignature;
import io.kiln.pools.TextModels;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Suggestions;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What an infer step may call: a deployment ({@code infer: {deployment: NAME}}) or a model graph
 * ({@code infer: {graph: NAME}}), each of the file or already applied. Immutable.
 *
 * @param deployments the deployments' names
 * @param graphs the graphs' names
 * @param signatures the signatures of the deployments whose specs are known here (the file's, those deployed)
 * @param graphOutputs the output names of the graphs whose specs are known here
 */
record InferModels(Set<String> deployments, Set<String> graphs, Map<String, ModelSignature> signatures,
                   Map<String, Set<String>> graphOutputs) {

  /** The deployment or graph an infer section names. */
  record Target(String name, boolean graph) {
  }

  InferModels {
    deployments = Set.copyOf(deployments);
    graphs = Set.copyOf(graphs);
    signatures = Map.copyOf(signatures);
    graphOutputs = Map.copyOf(graphOutputs);
  }

  InferModels(Set<String> deployments, Set<String> graphs) {
    this(deployments, graphs, Map.of(), Map.of());
  }

  /** The output names of what an infer step calls, or null when its signature is not known here. */
  Set<String> outputs(String name, boolean graph) {
    if (graph) {
      return graphOutputs.get(name);
    }
    ModelSignature s = signatures.get(name);
    if (s == null || s.outputs().isEmpty()) {
      return null;
    }
    Set<String> out = new TreeSet<>();
    s.outputs().forEach(t -> out.add(t.name()));
    return out;
  }

  /**
   * The deployment a generate section names, or null after reporting why not: one known, and where its signature is
   * known, a text generation model.
   */
  String generator(MappingReader f, Problems problems) {
    String deployment = f.requiredText("deployment");
    if (deployment == null) {
      return null;
    }
    if (!deployments.contains(deployment)) {
      problems.at(f.at("deployment"), f.path("deployment"), "unknown deployment '" + deployment + "'"
          + Suggestions.didYouMean(deployment, deployments) + (deployments.isEmpty() ? "; declare it under deployments:"
          : "; known deployments: " + String.join(", ", new TreeSet<>(deployments))));
      return null;
    }
    ModelSignature s = signatures.get(deployment);
    if (s != null && !s.outputs().isEmpty() && !TextModels.generates(s)) {
      problems.at(f.at("deployment"), f.path("deployment"), "deployment '" + deployment + "' is not a text"
          + " generation model (a streaming model of text_input in, text_output chunks out; e.g. engine: Decoder)");
      return null;
    }
    return deployment;
  }

  /** What {@code f} (the infer section) names, or null after reporting why not. */
  Target read(MappingReader f, Problems problems) {
    if (f.has("graph")) {
      String graph = f.requiredText("graph");
      if (f.has("deployment")) {
        problems.at(f.keyAt("graph"), f.path("graph"), "an infer step calls a deployment or a graph, not both");
        return null;
      }
      if (graph != null && !graphs.contains(graph)) {
        problems.at(f.at("graph"), f.path("graph"), "unknown graph '" + graph + "'"
            + (deployments.contains(graph) ? "; '" + graph + "' is a deployment: write deployment: " + graph
            : Suggestions.didYouMean(graph, graphs) + (graphs.isEmpty() ? "; declare it under graphs:"
            : "; known graphs: " + String.join(", ", new TreeSet<>(graphs)))));
        return null;
      }
      return graph == null ? null : new Target(graph, true);
    }
    String deployment = f.requiredText("deployment");
    if (deployment != null && !deployments.contains(deployment)) {
      problems.at(f.at("deployment"), f.path("deployment"), "unknown deployment '" + deployment + "'"
          + (graphs.contains(deployment) ? "; '" + deployment + "' is a graph: write graph: " + deployment
          : Suggestions.didYouMean(deployment, deployments) + (deployments.isEmpty() ? "; declare it under deployments:"
          : "; known deployments: " + String.join(", ", new TreeSet<>(deployments)))));
      return null;
    }
    return deployment == null ? null : new Target(deployment, false);
  }
}
