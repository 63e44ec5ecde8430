package io.kiln.gateway.dashboard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.gateway.dashboard.RequestSampler.ModelDelta;
import io.kiln.gateway.dashboard.RequestSampler.Sample;
import io.kiln.runtime.WireCodec;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The cluster's per-model request series, as one node's dashboard shows them. Every node answers
 * {@code kiln.dashboard.series.<node>} with its {@link RequestSampler}'s samples after a given second (JSON, see
 * {@link SampleCodec}); the node serving the page asks every live node for what it has not seen yet
 * ({@link #refresh}), keeps each node's samples of the window, and adds them up second by second: requests and
 * errors per second, and p50/p99 read from the summed histogram buckets (so the percentiles are the cluster's, not an
 * average of the nodes'). Nobody asks anything while nobody watches; a watched cluster of N nodes costs one small
 * request per node per poll. A node that does not answer within {@link #ASK_TIMEOUT_MS} keeps the samples it gave
 * before; a node that left keeps them until they fall out of the window.
 *
 * <p>Thread-safe (synchronised); the asks run on the event bus and never block.
 */
final class ClusterSeries {

  static final String ADDRESS_PREFIX = "kiln.dashboard.series.";
  static final long ASK_TIMEOUT_MS = 2000;

  private static final ObjectMapper JSON = WireCodec.json();

  /** What is known of one node's samples. */
  private static final class NodeSamples {
    final TreeMap<Long, Sample> bySecond = new TreeMap<>();
    JsonNode gpus;
  }

  private final Vertx vertx;
  private final String localNode;
  private final RequestSampler local;
  private final Supplier<JsonNode> localGpus;
  private final int windowSeconds;
  private final Map<String, NodeSamples> nodes = new HashMap<>();
  private MessageConsumer<String> consumer;

  /**
   * @param localGpus this node's GPU samples for the page, or null when it has none
   * @param windowSeconds the longest window kept and shown
   */
  ClusterSeries(Vertx vertx, String localNode, RequestSampler local, Supplier<JsonNode> localGpus, int windowSeconds) {
    this.vertx = vertx;
    this.localNode = localNode;
    this.local = local;
    this.localGpus = localGpus;
    this.windowSeconds = windowSeconds;
  }

  static String address(String node) {
    return ADDRESS_PREFIX + node;
  }

  /** Starts answering other nodes' asks for this node's samples. */
  Future<Void> listen() {
    consumer = vertx.eventBus().<String>consumer(address(localNode), msg -> {
      long since;
      try {
        since = JSON.readTree(msg.body()).path("since").asLong(Long.MIN_VALUE);
      } catch (Exception e) {
        msg.fail(400, "expected {\"since\": epochSecond}");
        return;
      }
      msg.reply(WireCodec.toJson(SampleCodec.encode(localNode, local.since(since), localGpus.get())));
    });
    return consumer.completion();
  }

  Future<Void> close() {
    return consumer == null ? Future.succeededFuture() : consumer.unregister();
  }

  /** Asks each of {@code alive} for its samples since the last one seen; completes when all answered or timed out. */
  CompletionStage<Void> refresh(Collection<String> alive) {
    List<Future<Void>> asks = new ArrayList<>();
    for (String node : alive) {
      long since = lastSecond(node);
      if (node.equals(localNode)) {
        store(node, local.since(since), localGpus.get());
        continue;
      }
      String body = WireCodec.toJson(Map.of("since", since));
      asks.add(vertx.eventBus().<String>request(address(node), body, new DeliveryOptions().setSendTimeout(ASK_TIMEOUT_MS))
          .map(reply -> {
            try {
              JsonNode o = JSON.readTree(reply.body());
              store(node, SampleCodec.decode(o), o.get("gpus"));
            } catch (Exception e) {
              // A garbled answer is as good as none: the node's earlier samples stay.
            }
            return (Void) null;
          })
          .otherwise((Void) null));
    }
    return Future.join(asks).<Void>mapEmpty().otherwiseEmpty().toCompletionStage();
  }

  private synchronized long lastSecond(String node) {
    NodeSamples s = nodes.get(node);
    return s == null || s.bySecond.isEmpty() ? Long.MIN_VALUE : s.bySecond.lastKey();
  }

  private synchronized void store(String node, List<Sample> samples, JsonNode gpus) {
    NodeSamples s = nodes.computeIfAbsent(node, k -> new NodeSamples());
    for (Sample x : samples) {
      s.bySecond.merge(x.second(), x, (a, b) -> b);
    }
    s.gpus = gpus;
    while (s.bySecond.size() > windowSeconds) {
      s.bySecond.pollFirstEntry();
    }
  }

  /** The GPU samples {@code node} last sent, or null. */
  synchronized JsonNode gpus(String node) {
    NodeSamples s = nodes.get(node);
    return s == null ? null : s.gpus;
  }

  /**
   * The series of the {@code window} seconds ending with epoch second {@code end}: {@code {"start", "end",
   * "step": 1, "models": {model: {"rate": [req/s], "errors": [err/s], "p50": [ms|null], "p99": [ms|null]}}}},
   * one value per second; every name of {@code alsoModels} appears, with zeros if it had no requests.
   */
  synchronized ObjectNode render(long end, int window, Set<String> alsoModels) {
    long start = end - window + 1;
    Set<String> models = new TreeSet<>(alsoModels);
    for (NodeSamples s : nodes.values()) {
      s.bySecond.subMap(start, true, end, true).values().forEach(x -> models.addAll(x.models().keySet()));
      s.bySecond.headMap(end - windowSeconds, true).clear();
    }
    ObjectNode o = JSON.createObjectNode().put("start", start).put("end", end).put("step", 1);
    ObjectNode out = o.putObject("models");
    for (String model : models) {
      ArrayNode rate = JSON.createArrayNode();
      ArrayNode errors = JSON.createArrayNode();
      ArrayNode p50 = JSON.createArrayNode();
      ArrayNode p99 = JSON.createArrayNode();
      for (long t = start; t <= end; t++) {
        long n = 0;
        long e = 0;
        TreeMap<Double, double[]> buckets = new TreeMap<>(); // upper bound → {lower bound, count}
        for (NodeSamples s : nodes.values()) {
          Sample x = s.bySecond.get(t);
          ModelDelta d = x == null ? null : x.models().get(model);
          if (d == null) {
            continue;
          }
          n += d.requests();
          e += d.errors();
          for (int i = 0; i < d.counts().length; i++) {
            if (d.counts()[i] > 0) {
              double[] b = buckets.computeIfAbsent(d.bounds()[i], k -> new double[2]);
              b[0] = d.lowers()[i];
              b[1] += d.counts()[i];
            }
          }
        }
        rate.add(n);
        errors.add(e);
        if (n == 0) {
          p50.addNull();
          p99.addNull();
        } else {
          p50.add(quantileMillis(buckets, n, 0.50));
          p99.add(quantileMillis(buckets, n, 0.99));
        }
      }
      ObjectNode m = out.putObject(model);
      m.set("rate", rate);
      m.set("errors", errors);
      m.set("p50", p50);
      m.set("p99", p99);
    }
    return o;
  }

  /**
   * The {@code q} quantile in milliseconds of {@code total} values counted in {@code buckets} (upper bound in seconds
   * → {lower bound, count}; values beyond the last bound count in total only), interpolated linearly inside its
   * bucket, as Prometheus's {@code histogram_quantile} does.
   */
  static double quantileMillis(TreeMap<Double, double[]> buckets, long total, double q) {
    double rank = q * total;
    double below = 0;
    double last = 0;
    for (Map.Entry<Double, double[]> e : buckets.entrySet()) {
      double lower = e.getValue()[0];
      double c = e.getValue()[1];
      if (c > 0 && below + c >= rank) {
        double within = (rank - below) / c;
        return round(1000 * (lower + (e.getKey() - lower) * within));
      }
      below += c;
      last = e.getKey();
    }
    return round(1000 * last); // in the overflow: at least the last bound
  }

  private static double round(double ms) {
    return Math.round(ms * 1000) / 1000.0;
  }
}
