package io.kiln.control.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.RequestSampler.ModelDelta;
import io.kiln.control.impl.RequestSampler.Sample;
import io.kiln.runtime.WireCodec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A node's answer to {@code kiln.dashboard.series.<node>}, JSON: {@code {"node", "incarnation", "samples": [{"s": seq,
 * "t": epochSecond,
 * "m": {model: {"n": requests, "e": errors, "l": [lower bound s...], "b": [upper bound s...], "c": [count...], "o": overflow}}}], "gpus": [...]}},
 * only buckets that counted something listed. Bounded on both sides: a node sends at most the samples its ring
 * holds, and a reader takes at most {@link #MAX_SAMPLES} samples of {@link #MAX_MODELS} models.
 */
final class SampleCodec {

  static final int MAX_SAMPLES = 3600;
  static final int MAX_MODELS = 1000;
  static final int MAX_BUCKETS = 512;

  private static final ObjectMapper JSON = WireCodec.json();

  private SampleCodec() {
  }

  static ObjectNode encode(String node, String incarnation, List<Sample> samples, JsonNode gpus) {
    ObjectNode o = JSON.createObjectNode().put("node", node).put("incarnation", incarnation);
    ArrayNode list = o.putArray("samples");
    for (Sample s : samples) {
      ObjectNode so = list.addObject().put("s", s.seq()).put("t", s.second());
      ObjectNode models = so.putObject("m");
      s.models().forEach((model, d) -> {
        ObjectNode mo = models.putObject(model).put("n", d.requests()).put("e", d.errors()).put("o", d.overflow());
        ArrayNode l = mo.putArray("l");
        ArrayNode b = mo.putArray("b");
        ArrayNode c = mo.putArray("c");
        for (int i = 0; i < d.counts().length; i++) {
          if (d.counts()[i] > 0) {
            l.add(d.lowers()[i]);
            b.add(d.bounds()[i]);
            c.add(d.counts()[i]);
          }
        }
      });
    }
    if (gpus != null) {
      o.set("gpus", gpus);
    }
    return o;
  }

  /** Reads {@link #encode}'s samples; entries that are not of that shape are skipped, never guessed at. */
  static List<Sample> decode(JsonNode o) {
    List<Sample> out = new ArrayList<>();
    for (JsonNode so : o.path("samples")) {
      if (out.size() >= MAX_SAMPLES) {
        break;
      }
      if (!so.path("s").canConvertToLong() || !so.path("t").canConvertToLong() || !so.path("m").isObject()) {
        continue;
      }
      Map<String, ModelDelta> models = new HashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = so.path("m").fields(); it.hasNext() && models.size() < MAX_MODELS; ) {
        Map.Entry<String, JsonNode> e = it.next();
        ModelDelta d = delta(e.getValue());
        if (d != null) {
          models.put(e.getKey(), d);
        }
      }
      out.add(new Sample(so.path("s").asLong(), so.path("t").asLong(), models));
    }
    return out;
  }

  private static ModelDelta delta(JsonNode mo) {
    JsonNode l = mo.path("l");
    JsonNode b = mo.path("b");
    JsonNode c = mo.path("c");
    if (!l.isArray() || !b.isArray() || !c.isArray() || b.size() != c.size() || l.size() != b.size()
        || b.size() > MAX_BUCKETS) {
      return null;
    }
    double[] lowers = new double[l.size()];
    double[] bounds = new double[b.size()];
    long[] counts = new long[c.size()];
    for (int i = 0; i < bounds.length; i++) {
      lowers[i] = l.get(i).asDouble();
      bounds[i] = b.get(i).asDouble();
      counts[i] = Math.max(0, c.get(i).asLong());
    }
    return new ModelDelta(Math.max(0, mo.path("n").asLong()), Math.max(0, mo.path("e").asLong()), lowers, bounds, counts,
        Math.max(0, mo.path("o").asLong()));
  }
}
