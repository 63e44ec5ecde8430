package io.kiln.serve.impl;

import io.kiln.serve.DeploymentStatus.Phase;
import java.util.List;

/**
 * Which version of a deployment serves, and the phase it stands in, from what one reconcile pass saw. The
 * rules, in order: a failed desired version leaves the previous one serving; with no node selected the
 * deployment is unschedulable; a desired version ready on every selected node serves (READY); otherwise
 * the previously serving version keeps serving while it has a ready pool (ROLLING); otherwise the desired
 * version serves wherever it is ready already (DEPLOYING). A pure function.
 */
final class Rollout {

  private Rollout() {
  }

  /**
   * What a pass saw of one deployment.
   *
   * @param desired the desired version
   * @param placements nodes the deployment selects
   * @param readyPlacements selected nodes whose pool of the desired version is ready
   * @param desiredReady whether any pool of the desired version is ready (on any node)
   * @param previous the version that served after the last pass, or null
   * @param previousReady whether a pool of {@code previous} is ready and not draining
   * @param failure why the desired version failed to start, or null
   * @param problems why no node is selected (when none is)
   * @param stalePools pools of other versions, or on nodes no longer selected, still running
   */
  record Facts(String desired, int placements, int readyPlacements, boolean desiredReady, String previous,
               boolean previousReady, String failure, List<String> problems, int stalePools) {
  }

  /**
   * @param serving the version to route to, or null
   * @param everywhere whether the desired version is ready on every selected node (stale pools may go)
   */
  record Outcome(String serving, Phase phase, String message, boolean everywhere) {
  }

  static Outcome decide(Facts f) {
    String old = f.previous() != null && !f.previous().equals(f.desired()) && f.previousReady() ? f.previous() : null;
    if (f.failure() != null) {
      return new Outcome(old, Phase.FAILED, "version " + f.desired() + " failed to start: " + f.failure()
          + (old != null ? "; version " + old + " keeps serving" : ""), false);
    }
    if (f.placements() == 0) {
      String serving = old != null ? old : f.desiredReady() ? f.desired() : null;
      return new Outcome(serving, Phase.UNSCHEDULABLE, String.join("; ", f.problems())
          + (serving != null ? "; version " + serving + " serves where its pools still run" : ""), false);
    }
    if (f.readyPlacements() == f.placements()) {
      return new Outcome(f.desired(), Phase.READY, "serving on " + f.placements() + " node(s)"
          + (f.stalePools() > 0 ? "; retiring " + f.stalePools() + " old pool(s)" : ""), true);
    }
    String progress = f.readyPlacements() + " of " + f.placements() + " node(s) ready";
    if (old != null) {
      return new Outcome(old, Phase.ROLLING, "warming version " + f.desired() + " (" + progress + "); version " + old
          + " serves until it is ready everywhere", false);
    }
    if (f.desiredReady()) {
      return new Outcome(f.desired(), Phase.DEPLOYING, "serving version " + f.desired() + " where ready (" + progress
          + ")", false);
    }
    return new Outcome(null, Phase.DEPLOYING, "warming version " + f.desired() + " (" + progress + ")", false);
  }
}
