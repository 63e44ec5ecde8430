package io.kiln.pipelines.impl;

import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.TaskOptions;
import io.kiln.pipelines.StepPlacement;
import io.kiln.pipelines.StepSpec;
import java.time.Duration;
import java.util.function.Function;

/**
 * How a step becomes task options: its placement mapped to a scheduling strategy, its resources (plus one
 * unit of a {@code node_with_resource} key it does not already ask for). A pure function.
 *
 * <ul>
 *   <li>{@code default} → {@link SchedulingStrategy#DEFAULT}</li>
 *   <li>{@code spread} → {@link SchedulingStrategy#SPREAD}</li>
 *   <li>{@code same_node_as: S} → hard node affinity to the node S ran on: there or nowhere</li>
 *   <li>{@code node_with_resource: K} → DEFAULT, requesting K, so only nodes that have K qualify</li>
 * </ul>
 * Retries are the coordinator's (so that each attempt is visible and node losses are told apart): the
 * task itself is never retried by the runtime.
 */
public final class Placements {

  private Placements() {
  }

  /**
   * @param nodeOfStep the node an earlier step ran on
   * @param placementTimeout how long the step may wait for its resources
   * @throws IllegalStateException if a {@code same_node_as} step has not run
   */
  public static TaskOptions options(StepSpec step, Function<String, String> nodeOfStep, Duration placementTimeout) {
    Resources resources = step.resources();
    StepPlacement p = step.placement();
    SchedulingStrategy strategy = switch (p.kind()) {
      case DEFAULT -> SchedulingStrategy.DEFAULT;
      case SPREAD -> SchedulingStrategy.SPREAD;
      case SAME_NODE_AS -> {
        String node = nodeOfStep.apply(p.target());
        if (node == null || node.isEmpty()) {
          throw new IllegalStateException("step '" + step.name() + "' follows '" + p.target() + "', which has not run");
        }
        yield SchedulingStrategy.onNode(node);
      }
      case NODE_WITH_RESOURCE -> {
        if (resources.unitsOf(p.target()) == 0) {
          resources = resources.with(p.target(), 1);
        }
        yield SchedulingStrategy.DEFAULT;
      }
    };
    return TaskOptions.builder().resources(resources).strategy(strategy).maxRetries(0).retryExceptions(false)
        .placementTimeout(placementTimeout.isNegative() || placementTimeout.isZero() ? Duration.ofMillis(1)
            : placementTimeout)
        .timeout(Duration.ofMillis(step.timeoutMs())).build();
  }
}
