package io.kiln.pipelines;

import java.util.Objects;

/**
 * Where a step runs.
 *
 * <ul>
 *   <li>{@link Kind#DEFAULT}: the runtime's default placement (pack below 50 % utilisation, then spread).
 *   <li>{@link Kind#SPREAD}: across nodes, least utilised first (downloads spread over the cluster).
 *   <li>{@link Kind#SAME_NODE_AS}: on the node where the earlier step {@code target} ran, with hard affinity:
 *       there or not at all (see {@link OnNodeLoss}).
 *   <li>{@link Kind#NODE_WITH_RESOURCE}: only on nodes that have resource {@code target} (e.g. a
 *       {@code callback_slot} only the head advertises); the step holds one unit unless its resources
 *       say otherwise.
 * </ul>
 *
 * @param target the step name or resource key; empty for DEFAULT and SPREAD
 */
public record StepPlacement(Kind kind, String target) {

  public static final StepPlacement DEFAULT = new StepPlacement(Kind.DEFAULT, "");
  public static final StepPlacement SPREAD = new StepPlacement(Kind.SPREAD, "");

  public enum Kind { DEFAULT, SPREAD, SAME_NODE_AS, NODE_WITH_RESOURCE }

  public StepPlacement {
    Objects.requireNonNull(kind, "kind");
    target = target == null ? "" : target;
    boolean needsTarget = kind == Kind.SAME_NODE_AS || kind == Kind.NODE_WITH_RESOURCE;
    if (needsTarget == target.isEmpty()) {
      throw new IllegalArgumentException(needsTarget ? kind + " needs a target" : kind + " takes no target");
    }
  }

  public static StepPlacement sameNodeAs(String step) {
    return new StepPlacement(Kind.SAME_NODE_AS, step);
  }

  public static StepPlacement nodeWithResource(String key) {
    return new StepPlacement(Kind.NODE_WITH_RESOURCE, key);
  }

  /** As written in YAML: {@code spread}, {@code same_node_as: fetch}. */
  @Override
  public String toString() {
    return switch (kind) {
      case DEFAULT -> "default";
      case SPREAD -> "spread";
      case SAME_NODE_AS -> "same_node_as: " + target;
      case NODE_WITH_RESOURCE -> "node_with_resource: " + target;
    };
  }
}
