package io.kiln.pipelines;

import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.GraphSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A validated deployment file with its model graphs and pipelines.
 *
 * @param source the file as named to the loader
 * @param deployments the file's deployments, as {@link io.kiln.serve.DeploymentLoader} reads them
 * @param pipelines the file's pipelines; empty when it has no {@code pipelines:} section
 * @param graphs the file's model graphs; empty when it has no {@code graphs:} section
 */
public record PipelineFile(Path source, List<DeploymentSpec> deployments, List<PipelineSpec> pipelines,
                           List<GraphSpec> graphs) {

  public PipelineFile {
    Objects.requireNonNull(source, "source");
    deployments = List.copyOf(deployments);
    pipelines = List.copyOf(pipelines);
    graphs = List.copyOf(graphs);
  }

  /** A file without graphs. */
  public PipelineFile(Path source, List<DeploymentSpec> deployments, List<PipelineSpec> pipelines) {
    this(source, deployments, pipelines, List.of());
  }
}
