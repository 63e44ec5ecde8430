package io.kiln.control.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.LlmSampler.LlmDelta;
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
 * "m": {model: {"n": requests, "e": errors, "l": [lower bound s...], "b": [upper bound s...], "c": [count...], "o": overflow}},
 * "g": {model: {"f": first-token histogram, "i": inter-token histogram (both shaped as a model's requests above, absent
 * when empty), "k": tokens generated, "d": runs the decoder (then "r": running, "w": waiting, "u": KV blocks used, "v":
 * KV blocks, "h": prefix hit tokens, "q": prefix lookup tokens, "p": preemptions)}}}], "gpus": [...]}} (the text
 * generation models, {@link LlmSampler}), only buckets that counted something listed. Bounded on both sides: a node
 * sends at most the samples its ring holds, and a reader takes at most {@link #MAX_SAMPLES} samples of {@link #MAX_MODELS} models.
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
      s.models().forEach((model, d) -> histogram(models.putObject(model), d));
      if (!s.llm().isEmpty()) {
        ObjectNode llm = so.putObject("g");
        s.llm().forEach((model, g) -> {
          ObjectNode go = llm.putObject(model).put("k", g.generationTokens()).put("d", g.decoder());
          if (g.firstToken() != null) {
            histogram(go.putObject("f"), g.firstToken());
          }
          if (g.interToken() != null) {
            histogram(go.putObject("i"), g.interToken());
          }
          if (g.decoder()) {
            go.put("r", g.running()).put("w", g.waiting()).put("u", g.kvUsed()).put("v", g.kvTotal())
                .put("h", g.prefixHits()).put("q", g.prefixLookups()).put("p", g.preemptions());
          }
        });
      }
    }
    if (gpus != null) {
      o.set("gpus", gpus);
    }
    return o;
  }

  private static void histogram(ObjectNode mo, ModelDelta d) {
    mo.put("n", d.requests()).put("e", d.errors()).put("o", d.overflow());
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
      out.add(new Sample(so.path("s").asLong(), so.path("t").asLong(), models, llm(so.path("g"))));
    }
    return out;
  }

  /** A sample's text generation models ({@code "g"}); entries not of that shape are skipped. */
  private static Map<String, LlmDelta> llm(JsonNode g) {
    Map<String, LlmDelta> out = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = g.fields(); it.hasNext() && out.size() < MAX_MODELS; ) {
      Map.Entry<String, JsonNode> e = it.next();
      JsonNode m = e.getValue();
      if (m.isObject()) {
        out.put(e.getKey(), new LlmDelta(m.has("f") ? delta(m.path("f")) : null,
            m.has("i") ? delta(m.path("i")) : null, Math.max(0, m.path("k").asLong()), m.path("d").asBoolean(),
            nonNegative(m.path("r")), nonNegative(m.path("w")), nonNegative(m.path("u")), nonNegative(m.path("v")),
            Math.max(0, m.path("h").asLong()), Math.max(0, m.path("q").asLong()), Math.max(0, m.path("p").asLong())));
      }
    }
    return Map.copyOf(out);
  }

  private static double nonNegative(JsonNode v) {
    double d = v.asDouble();
    return Double.isFinite(d) && d > 0 ? d : 0;
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
