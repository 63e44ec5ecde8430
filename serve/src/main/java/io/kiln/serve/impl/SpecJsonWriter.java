package io.kiln.serve.impl;

import io.kiln.serve.yaml.Durations;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.BatchingSpec;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.QueueSpec;
import io.kiln.pools.SequenceSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spec.ModelField;
import io.kiln.pools.spec.ModelFields;
import io.kiln.runtime.Resources;
import io.kiln.serve.AutoscalingSpec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.PoolPlacement;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Writes specs as JSON trees in the YAML schema's own field names, every default filled in (a model's fields as its
 * schema {@link ModelFields} lists them, those at their defaults left out, as in YAML), so the JSON of a spec is also
 * a valid deployment document for {@link SpecReader}. Stateless; thread-safe.
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
    if (s.model() != null) { // the model's fields written beside its section (sequence)
      putFields(o, s.model(), ModelField.Place.DEPLOYMENT);
    }
    return o;
  }

  /** The model section: every field of {@link ModelFields} placed there that is required or not at its default. */
  private static ObjectNode model(ModelSpec m) {
    ObjectNode o = JSON.objectNode();
    putFields(o, m, ModelField.Place.MODEL);
    return o;
  }

  private static void putFields(ObjectNode o, ModelSpec m, ModelField.Place place) {
    for (ModelField f : ModelFields.at(place)) {
      Object value = ModelFields.get(f, m);
      if (f.required() || !f.isDefault(value)) {
        ObjectNode into = f.section().isEmpty() ? o
            : o.get(f.section()) instanceof ObjectNode section ? section : o.putObject(f.section());
        into.set(f.key(), value(f, value));
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static JsonNode value(ModelField f, Object value) {
    return switch (f.kind()) {
      case PATH -> JSON.textNode(io.kiln.pools.ModelUris.canonical(value.toString())); // a Path folds https:// to https:/
      case TEXT, ENUM -> JSON.textNode(value.toString());
      case BOOL -> JSON.booleanNode((Boolean) value);
      case INT -> JSON.numberNode((Integer) value);
      case INT_LIST -> {
        ArrayNode a = JSON.arrayNode();
        ((List<Integer>) value).forEach(a::add);
        yield a;
      }
      case TENSORS -> tensors((List<TensorSpec>) value);
      case MAP -> {
        ObjectNode map = JSON.objectNode();
        ((Map<String, String>) value).forEach(map::put);
        yield map;
      }
      case SECTION -> section(f, value);
    };
  }

  /** A nested section, written by the writer its field names. */
  private static ObjectNode section(ModelField f, Object value) {
    if (f == ModelFields.PYTHON) {
      PythonOptions p = (PythonOptions) value;
      ObjectNode py = JSON.objectNode();
      py.put("class", p.className());
      py.put("interpreter", p.interpreter());
      py.set("config", io.kiln.runtime.WireCodec.json().valueToTree(p.config()));
      py.set("env", io.kiln.runtime.WireCodec.json().valueToTree(p.env()));
      putMillis(py, "startup_timeout_ms", p.startupTimeout());
      putMillis(py, "request_timeout_ms", p.requestTimeout());
      return py;
    }
    if (f == ModelFields.SEQUENCE) {
      SequenceSpec seq = (SequenceSpec) value;
      ObjectNode sequence = JSON.objectNode();
      putMillis(sequence, "idle_timeout_ms", seq.idleTimeout());
      sequence.put("max_sequences", seq.maxSequences());
      ArrayNode state = sequence.putArray("state");
      for (SequenceSpec.StateSpec st : seq.state()) {
        ObjectNode e = state.addObject().put("input", st.input()).put("output", st.output());
        if (st.init() == 0) {
          e.put("init", SequenceReader.ZEROS);
        } else {
          e.put("init", st.init());
        }
      }
      return sequence;
    }
    throw new IllegalStateException("no JSON writer for section " + f.yaml() + " (add one here)");
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
