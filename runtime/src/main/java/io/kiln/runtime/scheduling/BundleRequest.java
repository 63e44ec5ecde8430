package io.kiln.runtime.scheduling;

import io.kiln.runtime.PlacementGroupStrategy;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A placement group's bundles to place. Immutable.
 *
 * @param bundles each bundle's resources, by index
 * @param strategy how to spread them
 * @param kept the node each bundle already holds (rescheduling after a node died), by index; null entries
 *     are the bundles to place. Kept bundles' resources are already out of their node's available.
 */
public record BundleRequest(List<Resources> bundles, PlacementGroupStrategy strategy, List<String> kept) {

  public BundleRequest {
    bundles = List.copyOf(bundles);
    Objects.requireNonNull(strategy, "strategy");
    kept = Collections.unmodifiableList(new ArrayList<>(kept));
    if (kept.size() != bundles.size()) {
      throw new IllegalArgumentException("kept has " + kept.size() + " entries for " + bundles.size() + " bundles");
    }
  }

  /** A group placed from scratch. */
  public static BundleRequest of(List<Resources> bundles, PlacementGroupStrategy strategy) {
    return new BundleRequest(bundles, strategy, Collections.nCopies(bundles.size(), null));
  }
}
