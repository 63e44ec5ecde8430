package io.kiln.pipelines;

import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What a run does when a step pinned with {@code same_node_as} cannot run because that node left the
 * cluster (its cached data went with it).
 */
public enum OnNodeLoss {
  /** Fail the run with an error naming the node (hard locality). */
  FAIL("fail"),
  /** Re-run the chain from the step that chose the node (its fetch), on a live node (soft locality). */
  RERUN("rerun");

  private final String spelling;

  OnNodeLoss(String spelling) {
    this.spelling = spelling;
  }

  @JsonValue
  public String spelling() {
    return spelling;
  }
}
