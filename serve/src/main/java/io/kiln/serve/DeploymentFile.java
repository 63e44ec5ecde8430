package io.kiln.serve;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A validated deployment file: every deployment it declares, in file order, with distinct
 * {@code name@version} and model URIs resolved against the file's folder.
 *
 * @param source the file as it was named to {@link DeploymentLoader} (used in messages)
 * @param deployments at least one deployment
 */
public record DeploymentFile(Path source, List<DeploymentSpec> deployments) {

  public DeploymentFile {
    Objects.requireNonNull(source, "source");
    deployments = List.copyOf(deployments);
  }
}
