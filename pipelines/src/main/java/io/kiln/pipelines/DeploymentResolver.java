package io.kiln.pipelines;

import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.ServeController;
import java.util.Optional;

/**
 * Which version of a deployment infer steps call, and its model's inputs. Must not block; called on the
 * coordinating node when an infer step is submitted.
 */
@FunctionalInterface
public interface DeploymentResolver {

  /** The deployment's target, or empty if no version of it is ready. */
  Optional<InferTarget> resolve(String deployment);

  /** The version the serve controller routes traffic to, with the desired spec's inputs. */
  static DeploymentResolver of(ServeController serve) {
    return name -> {
      Optional<String> version = serve.servingVersion(name);
      DeploymentSpec spec = serve.desired().get(name);
      if (version.isEmpty() || spec == null) {
        return Optional.empty();
      }
      return Optional.of(new InferTarget(name, version.get(), spec.model().inputs()));
    };
  }
}
