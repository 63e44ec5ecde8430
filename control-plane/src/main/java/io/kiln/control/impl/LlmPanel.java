package io.kiln.control.impl;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.LlmSampler.LlmDelta;
import io.kiln.control.impl.RequestSampler.ModelDelta;
import io.kiln.control.impl.RequestSampler.Sample;
import io.kiln.runtime.WireCodec;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The dashboard's "Generative models" panel, from every node's samples ({@link LlmSampler}): per text generation
 * model, over the last seconds of the window, time to first token p50/p99 and inter-token latency p50 (read from the
 * histogram buckets of all nodes added up, as {@code histogram_quantile} over {@code sum by (le)} would), output tokens
 * per second, prefix-cache hit rate (hit over looked-up tokens) and preemptions; and, as each node last reported them
 * (at most {@link #GAUGE_SECONDS} old), running and waiting sequences and KV-cache use summed over the nodes.
 */
final class LlmPanel {

  /** A node's gauges older than this (a node gone quiet or lost) are left out. */
  static final int GAUGE_SECONDS = 5;

  private static final ObjectMapper JSON = WireCodec.json();

  private LlmPanel() {
  }

  /** One model's figures added up over the nodes and seconds. */
  private static final class Acc {
    final TreeMap<Double, double[]> first = new TreeMap<>();
    final TreeMap<Double, double[]> inter = new TreeMap<>();
    long firstCount;
    long interCount;
    long tokens;
    long hits;
    long lookups;
    long preemptions;
    boolean decoder;
    double running;
    double waiting;
    double kvUsed;
    double kvTotal;
  }

  /**
   * {@code {model: {"requests", "ttftP50Ms", "ttftP99Ms", "itlP50Ms", "tokensPerSecond", "running", "waiting",
   * "kvUsage", "prefixHitRate", "preemptions", "seconds"}}}, null where there is nothing to compute it from.
   *
   * @param nodes each node's samples, oldest first
   * @param end the last epoch second shown
   * @param seconds how many seconds up to {@code end} the rates and percentiles cover
   */
  static ObjectNode render(Collection<? extends Collection<Sample>> nodes, long end, int seconds) {
    long start = end - seconds + 1;
    Map<String, Acc> byModel = new TreeMap<>();
    for (Collection<Sample> samples : nodes) {
      Map<String, LlmDelta> gauges = new TreeMap<>(); // this node's latest of each model
      for (Sample s : samples) {
        if (s.second() < start || s.second() > end) {
          continue;
        }
        s.llm().forEach((model, d) -> {
          Acc a = byModel.computeIfAbsent(model, k -> new Acc());
          a.firstCount += add(a.first, d.firstToken());
          a.interCount += add(a.inter, d.interToken());
          a.tokens += d.generationTokens();
          a.hits += d.prefixHits();
          a.lookups += d.prefixLookups();
          a.preemptions += d.preemptions();
          if (d.decoder() && s.second() > end - GAUGE_SECONDS) {
            gauges.put(model, d);
          }
        });
      }
      gauges.forEach((model, d) -> {
        Acc a = byModel.get(model);
        a.decoder = true;
        a.running += d.running();
        a.waiting += d.waiting();
        a.kvUsed += d.kvUsed();
        a.kvTotal += d.kvTotal();
      });
    }
    ObjectNode out = JSON.createObjectNode();
    byModel.forEach((model, a) -> {
      ObjectNode m = out.putObject(model).put("seconds", seconds).put("requests", a.firstCount);
      quantile(m, "ttftP50Ms", a.first, a.firstCount, 0.50);
      quantile(m, "ttftP99Ms", a.first, a.firstCount, 0.99);
      quantile(m, "itlP50Ms", a.inter, a.interCount, 0.50);
      m.put("tokensPerSecond", Math.round(1000.0 * a.tokens / seconds) / 1000.0);
      if (a.decoder) {
        m.put("running", a.running).put("waiting", a.waiting);
        if (a.kvTotal > 0) {
          m.put("kvUsage", a.kvUsed / a.kvTotal);
        } else {
          m.putNull("kvUsage");
        }
      } else {
        m.putNull("running").putNull("waiting").putNull("kvUsage");
      }
      if (a.lookups > 0) {
        m.put("prefixHitRate", (double) a.hits / a.lookups);
      } else {
        m.putNull("prefixHitRate");
      }
      m.put("preemptions", a.preemptions);
    });
    return out;
  }

  private static long add(TreeMap<Double, double[]> buckets, ModelDelta d) {
    if (d == null) {
      return 0;
    }
    for (int i = 0; i < d.counts().length; i++) {
      if (d.counts()[i] > 0) {
        double[] b = buckets.computeIfAbsent(d.bounds()[i], k -> new double[2]);
        b[0] = d.lowers()[i];
        b[1] += d.counts()[i];
      }
    }
    return d.requests();
  }

  private static void quantile(ObjectNode m, String field, TreeMap<Double, double[]> buckets, long n, double q) {
    if (n == 0) {
      m.putNull(field);
    } else {
      m.put(field, ClusterSeries.quantileMillis(buckets, n, q));
    }
  }

  /** The samples of {@code nodes} as lists, for {@link #render}. */
  static List<Collection<Sample>> of(Collection<? extends Map<Long, Sample>> nodes) {
    return nodes.stream().map(m -> (Collection<Sample>) m.values()).toList();
  }
}
