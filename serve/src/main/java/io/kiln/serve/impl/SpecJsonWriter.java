package io.kiln.serve.impl;

import io.kiln.serve.yaml.Durations;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.BatchingSpec;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.Resources;
import io.kiln.serve.AutoscalingSpec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.PoolPlacement;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Writes specs as JSON trees in the YAML schema's own field names, every default filled in, so the JSON
 * of a spec is also a valid deployment document for {@link SpecReader}. Stateless; thread-safe.
 */
public final class SpecJsonWriter {

  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  private SpecJsonWriter() {
  }

  public static ObjectNode file(List<DeploymentSpec> specs) {
    ObjectNode root = JSON.objectNode();
    ArrayNode list = root.putArray("deployments");
    specs.forEach(s -> list.add(deployment(s)));
    return root;
  }

  public static ObjectNode deployment(DeploymentSpec s) {
    ObjectNode o = JSON.objectNode();
    o.put("name", s.name());
    o.put("version", s.version());
    if (s.repository() != null) {
      ObjectNode repo = o.putObject("repository");
      ArrayNode models = repo.putArray("models");
      s.repository().models().forEach(e -> {
        ObjectNode one = models.addObject();
        one.put("name", e.name());
        one.setAll(model(e.model()));
      });
      repo.put("max_models_per_worker", s.repository().maxModelsPerWorker());
      repo.put("max_concurrent_loads", s.repository().maxConcurrentLoads());
      if (s.repository().maxModelBytes() > 0) { // bytes / 2^20 is an exact decimal, so the stored cap reads back equal
        repo.put("max_memory_mb", new java.math.BigDecimal(s.repository().maxModelBytes())
            .divide(java.math.BigDecimal.valueOf(1024 * 1024)).stripTrailingZeros());
      }
    } else {
      o.set("model", model(s.model()));
    }
    o.set("pool", pool(s.pool()));
    BatchingSpec b = s.batching();
    ObjectNode batching = o.putObject("batching");
    batching.put("max_batch_size", b.maxBatchSize());
    putMillis(batching, "max_batch_delay_ms", b.maxBatchDelay());
    QueueSpec q = s.queue();
    ObjectNode queue = o.putObject("queue");
    queue.put("max_queued", q.maxQueued());
    putMillis(queue, "timeout_ms", q.timeout());
    if (s.autoscaling().isPresent()) {
      AutoscalingSpec a = s.autoscaling().get();
      ObjectNode auto = o.putObject("autoscaling");
      auto.put("min_workers", a.minWorkers());
      auto.put("max_workers", a.maxWorkers());
      auto.put("target_ongoing_per_worker", a.targetOngoingPerWorker());
      putMillis(auto, "upscale_delay_ms", a.upscaleDelay());
      putMillis(auto, "downscale_delay_ms", a.downscaleDelay());
    }
    HealthSpec h = s.health();
    ObjectNode health = o.putObject("health");
    putMillis(health, "period_ms", h.period());
    putMillis(health, "timeout_ms", h.timeout());
    io.kiln.pools.SequenceSpec seq = s.model() == null ? null : s.model().sequence();
    if (seq != null) {
      ObjectNode sequence = o.putObject("sequence");
      putMillis(sequence, "idle_timeout_ms", seq.idleTimeout());
      sequence.put("max_sequences", seq.maxSequences());
      ArrayNode state = sequence.putArray("state");
      for (io.kiln.pools.SequenceSpec.StateSpec st : seq.state()) {
        ObjectNode e = state.addObject().put("input", st.input()).put("output", st.output());
        if (st.init() == 0) {
          e.put("init", SequenceReader.ZEROS);
        } else {
          e.put("init", st.init());
        }
      }
    }
    return o;
  }

  /** The spec's defaults ({@code auto} format, no architecture, engine threads) are left out, as in YAML. */
  private static ObjectNode model(ModelSpec m) {
    ObjectNode o = JSON.objectNode();
    o.put("uri", m.uri().toString());
    o.put("engine", m.engine());
    if (!m.format().equals(ModelSpec.FORMAT_AUTO)) {
      o.put("format", m.format());
    }
    if (!m.architecture().isEmpty()) {
      o.put("architecture", m.architecture());
    }
    o.set("inputs", tensors(m.inputs()));
    o.set("outputs", tensors(m.outputs()));
    ArrayNode sizes = o.putObject("warmup").putArray("batch_sizes");
    m.warmupBatchSizes().forEach(sizes::add);
    if (m.intraOpThreads() > 0 || m.interOpThreads() > 0) {
      ObjectNode threads = o.putObject("threads");
      threads.put("intra_op", Math.max(1, m.intraOpThreads()));
      threads.put("inter_op", Math.max(1, m.interOpThreads()));
    }
    if (m.allowCpuFallback()) {
      o.put("allow_cpu_fallback", true);
    }
    if (m.streaming()) {
      o.put("streaming", true);
    }
    if (!m.options().isEmpty()) {
      ObjectNode options = o.putObject("options");
      m.options().forEach(options::put);
    }
    if (m.python() != null) {
      ObjectNode py = o.putObject("python");
      py.put("class", m.python().className());
      py.put("interpreter", m.python().interpreter());
      py.set("config", io.kiln.runtime.WireCodec.json().valueToTree(m.python().config()));
      py.set("env", io.kiln.runtime.WireCodec.json().valueToTree(m.python().env()));
      putMillis(py, "startup_timeout_ms", m.python().startupTimeout());
      putMillis(py, "request_timeout_ms", m.python().requestTimeout());
    }
    return o;
  }

  private static ArrayNode tensors(List<TensorSpec> tensors) {
    ArrayNode a = JSON.arrayNode();
    for (TensorSpec t : tensors) {
      ObjectNode o = a.addObject();
      o.put("name", t.name());
      o.put("datatype", t.datatype().name());
      ArrayNode shape = o.putArray("shape");
      for (long d : t.shape()) {
        shape.add(d);
      }
    }
    return a;
  }

  private static ObjectNode pool(PoolPlacement p) {
    ObjectNode o = JSON.objectNode();
    o.put(p.workers().field(), p.workers().count());
    o.set("worker_resources", resources(p.workerResources()));
    ObjectNode selector = o.putObject("node_selector");
    p.nodeSelector().entrySet().stream().sorted(Map.Entry.comparingByKey())
        .forEach(e -> selector.put(e.getKey(), e.getValue()));
    o.put("max_restarts", p.maxRestarts());
    // Written only when set: a node of an earlier build reads the desired state too (a rolling upgrade), and its
    // reader refuses a field it does not know.
    if (p.waitForCapacity()) {
      o.put("wait_for_capacity", true);
    }
    return o;
  }

  /** Resources as numbers: whole amounts as integers, fractions as plain decimals (never 1E-4). */
  public static ObjectNode resources(Resources r) {
    ObjectNode o = JSON.objectNode();
    r.units().forEach((k, units) -> putUnits(o, k, units));
    return o;
  }

  /** Puts a fixed-point quantity ({@link Resources#SCALE} units per whole) as a number. */
  public static void putUnits(ObjectNode o, String key, long units) {
    if (units % Resources.SCALE == 0) {
      o.put(key, units / Resources.SCALE);
    } else {
      o.put(key, BigDecimal.valueOf(units, 4).stripTrailingZeros());
    }
  }

  private static void putMillis(ObjectNode o, String key, Duration d) {
    BigDecimal ms = Durations.toMillis(d);
    if (ms.scale() == 0) {
      o.put(key, ms.longValueExact());
    } else {
      o.put(key, ms);
    }
  }
}
