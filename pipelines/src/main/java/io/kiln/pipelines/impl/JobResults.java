package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.NodeCache;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a job writes for one input: its result (which node fetched and analysed it, the model's outputs) or
 * the record of its failure, and the cause a failure counts under. Pure functions.
 */
final class JobResults {

  private JobResults() {
  }

  static Map<String, Object> result(String jobId, InferTarget target, JobOutcome out) {
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("uri", out.uri());
    result.put("key", out.key());
    result.put("job", jobId);
    result.put("deployment", target.deployment());
    result.put("version", target.version());
    result.put("fetch_node", out.fetchNode());
    result.put("infer_node", out.inferNode());
    result.put("cached", out.cached());
    result.put("sha256", out.sha256());
    result.put("bytes", out.bytes());
    result.put("fetch_ms", out.fetchMs());
    result.put("infer_ms", out.inferMs());
    result.put("outputs", out.outputs());
    return result;
  }

  static Map<String, Object> failure(String jobId, String uri, String node, String cause, String message) {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("uri", uri);
    f.put("key", NodeCache.keyOf(uri));
    f.put("job", jobId);
    f.put("node", node);
    f.put("cause", cause);
    f.put("error", message);
    return f;
  }

  /** The cause a failed attempt counts under: the first word of the tasks' messages, else a guess. */
  static String causeOf(String message) {
    int colon = message.indexOf(':');
    String head = colon > 0 ? message.substring(0, colon) : "";
    return switch (head) {
      case "fetch", "decode", "infer", "overloaded", "pipeline" -> head;
      default -> message.contains("timed out") || message.contains("did not answer") ? "timeout" : "other";
    };
  }
}
