package io.kiln.runtime.scheduling;

import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import java.util.Objects;

/**
 * What to place: the resources an actor or task will hold and the strategy to place it by. Immutable.
 *
 * @param resources the quantities to reserve on the chosen node ({@link Resources#NONE} for a
 *     zero-resource actor such as a pool manager)
 * @param strategy where it may go
 * @param sequence a caller-chosen counter (e.g. per submitter) that rotates ties among equally
 *     utilised nodes for {@link SchedulingStrategy#SPREAD}, so successive placements with 0, 1, 2, ...
 *     go round-robin; any value is allowed and other strategies ignore it
 */
public record PlacementRequest(Resources resources, SchedulingStrategy strategy, long sequence) {

  public PlacementRequest {
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(strategy, "strategy");
  }

  /** A request with sequence 0. */
  public static PlacementRequest of(Resources resources, SchedulingStrategy strategy) {
    return new PlacementRequest(resources, strategy, 0);
  }
}
