package io.kiln.serve;

import java.util.List;

/**
 * What {@code kiln deploy} did: the validated deployments, the plan for the current cluster, and whether
 * they were stored as desired state (false for a dry run).
 */
public record ApplyResult(List<DeploymentSpec> deployments, Plan plan, boolean applied) {

  public ApplyResult {
    deployments = List.copyOf(deployments);
  }
}
