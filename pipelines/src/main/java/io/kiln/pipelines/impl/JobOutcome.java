package io.kiln.pipelines.impl;

import java.util.List;
import java.util.Map;

/**
 * What a job input's task answers: where the input was fetched and analysed, and the model's outputs.
 *
 * @param fetchNode the node whose cache holds the input (the task's node)
 * @param inferNode the node whose pool answered (the pool reports it)
 * @param cached whether the input was in the node's cache before the task
 */
public record JobOutcome(String key, String uri, String fetchNode, String inferNode, String sha256, long bytes,
                         boolean cached, long fetchMs, long inferMs, List<Map<String, Object>> outputs) {

  public JobOutcome {
    outputs = List.copyOf(outputs);
  }
}
