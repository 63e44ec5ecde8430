package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.TensorSpec;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.search.Search;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The bodies of {@code GET /v2/models/{m}/config} (Triton's model-configuration extension) and
 * {@code GET /v2/models/{m}/stats} (its statistics extension), made from what the gateway already has: the model's
 * {@link ModelInfo} and the meters of this node's registry. See docs/repository.md for each field's source.
 *
 * <p>Statistics are this node's only: the gateway's request meters ({@code kiln.gateway.requests},
 * {@code kiln.gateway.request.duration}) and, where the node's pools register into the same registry, the pools'
 * queue and compute timers ({@code kiln.pool.queue.duration}, {@code kiln.pool.compute.duration}).
 *
 * <p><b>Threading:</b> any thread; reads meters only (no I/O). Stateless.
 */
final class ModelReports {

  private ModelReports() {
  }

  /** The model's configuration in Triton's JSON shape. */
  static Map<String, Object> config(ModelInfo m) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("name", m.name());
    out.put("version", m.version());
    out.put("platform", m.platform());
    out.put("backend", backend(m.platform()));
    ModelInfo.Config c = m.config();
    out.put("max_batch_size", c == null ? 0 : c.poolMaxBatchSize());
    out.put("input", tensors(m.inputs()));
    out.put("output", tensors(m.outputs()));
    if (c != null) {
      if (c.poolMaxBatchSize() > 1) {
        out.put("dynamic_batching", Map.of("max_queue_delay_microseconds", c.maxQueueDelayMicros()));
      }
      Map<String, Object> group = new LinkedHashMap<>();
      group.put("count", c.instanceCount());
      group.put("kind", c.instanceKind());
      out.put("instance_group", List.of(group));
    }
    if (m.multiplexed() != null) {
      out.put("kiln_deployment", m.multiplexed().deployment());
    }
    return out;
  }

  private static List<Map<String, Object>> tensors(List<TensorSpec> specs) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (TensorSpec t : specs) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("name", t.name());
      j.put("data_type", dataType(t.datatype()));
      List<Long> dims = new ArrayList<>();
      for (long d : t.shape()) {
        dims.add(d);
      }
      j.put("dims", dims);
      out.add(j);
    }
    return out;
  }

  /** Triton's config enum names; BYTES is its TYPE_STRING. */
  static String dataType(DataType t) {
    return t == DataType.BYTES ? "TYPE_STRING" : "TYPE_" + t.name();
  }

  private static String backend(String platform) {
    return switch (platform) {
      case "onnxruntime_onnx" -> "onnxruntime";
      case "pytorch_torchscript", "djl_pytorch" -> "pytorch";
      case "kiln_builtin" -> "kiln";
      default -> platform;
    };
  }

  /**
   * Triton's statistics for {@code m} on this node.
   *
   * @param versionAsked whether the request named the version: then the pool figures are that version's, else
   *     every version's (the gateway's request figures always cover every version: its meters carry no version)
   * @param lastInferenceMillis when a request for the model last finished here, 0 if none
   */
  static Map<String, Object> stats(ModelInfo m, boolean versionAsked, MeterRegistry registry,
                                   long lastInferenceMillis) {
    long okCount = 0;
    long failCount = 0;
    for (Counter c : registry.find("kiln.gateway.requests").tag("model", m.name()).counters()) {
      if ("ok".equals(c.getId().getTag("outcome"))) {
        okCount += (long) c.count();
      } else {
        failCount += (long) c.count();
      }
    }
    long okNs = 0;
    long failNs = 0;
    for (Timer t : registry.find("kiln.gateway.request.duration").tag("model", m.name()).timers()) {
      long ns = (long) t.totalTime(TimeUnit.NANOSECONDS);
      if ("ok".equals(t.getId().getTag("outcome"))) {
        okNs += ns;
      } else {
        failNs += ns;
      }
    }
    // A repository model's pools are its deployment's, shared with the other models: their timers are not its own.
    long[] queue = m.multiplexed() != null ? new long[2] : poolTimer(registry, "kiln.pool.queue.duration", m,
        versionAsked);
    long[] compute = m.multiplexed() != null ? new long[2] : poolTimer(registry, "kiln.pool.compute.duration", m,
        versionAsked);

    Map<String, Object> inference = new LinkedHashMap<>();
    inference.put("success", duration(okCount, okNs));
    inference.put("fail", duration(failCount, failNs));
    inference.put("queue", duration(queue[0], queue[1]));
    // Kiln times a batch's execution as one span: input and output handling are inside compute_infer.
    inference.put("compute_input", duration(0, 0));
    inference.put("compute_infer", duration(compute[0], compute[1]));
    inference.put("compute_output", duration(0, 0));
    inference.put("cache_hit", duration(0, 0));
    inference.put("cache_miss", duration(0, 0));

    Map<String, Object> one = new LinkedHashMap<>();
    one.put("name", m.name());
    one.put("version", versionAsked ? m.version() : "");
    one.put("last_inference", lastInferenceMillis);
    one.put("inference_count", okCount);
    one.put("execution_count", compute[0]);
    one.put("inference_stats", inference);
    one.put("batch_stats", List.of());
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("model_stats", List.of(one));
    out.put("kiln_scope", "node");
    return out;
  }

  /** {count, total ns} of a pool timer over the deployment's pools in the registry (this node's). */
  private static long[] poolTimer(MeterRegistry registry, String name, ModelInfo m, boolean versionAsked) {
    Search search = registry.find(name).tag("deployment", m.name());
    if (versionAsked) {
      search = search.tag("version", m.version());
    }
    long[] out = new long[2];
    for (Timer t : search.timers()) {
      out[0] += t.count();
      out[1] += (long) t.totalTime(TimeUnit.NANOSECONDS);
    }
    return out;
  }

  private static Map<String, Object> duration(long count, long ns) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("count", count);
    d.put("ns", ns);
    return d;
  }
}
