package io.kiln.control.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.RequestSampler.ModelDelta;
import io.kiln.control.impl.RequestSampler.Sample;
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
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The cluster's per-model request series, as one node's dashboard shows them. Every node answers
 * {@code kiln.dashboard.series.<node>} with its {@link RequestSampler}'s samples after a given number (JSON, see
 * {@link SampleCodec}); the node serving the page asks every live node for the samples it has not seen yet, by number
 * ({@link #refresh}), keeps each node's samples of the window, and adds them up second by second: requests and
 * errors per second, and p50/p99 read from the summed histogram buckets (so the percentiles are the cluster's, not an
 * average of the nodes'). Nobody asks anything while nobody watches; a watched cluster of N nodes costs one small
 * request per node per poll. A node that does not answer within {@link #ASK_TIMEOUT_MS} keeps the samples it gave
 * before; a node that left keeps them until they fall out of the window; a node that restarted (another incarnation)
 * is read afresh.
 *
 * <p>Thread-safe (synchronised); the asks run on the event bus and never block.
 */
public final class ClusterSeries {

  static final String ADDRESS_PREFIX = "kiln.dashboard.series.";
  static final long ASK_TIMEOUT_MS = 2000;

  private static final ObjectMapper JSON = WireCodec.json();

  /** What is known of one node's samples, by their number. */
  private static final class NodeSamples {
    final TreeMap<Long, Sample> bySeq = new TreeMap<>();
    String incarnation = "";
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
  public ClusterSeries(Vertx vertx, String localNode, RequestSampler local, Supplier<JsonNode> localGpus, int windowSeconds) {
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
  public Future<Void> listen() {
    consumer = vertx.eventBus().<String>consumer(address(localNode), msg -> {
      long since;
      try {
        JsonNode ask = JSON.readTree(msg.body());
        // Numbers of another life of this node mean nothing now: such a reader gets everything.
        since = local.incarnation().equals(ask.path("incarnation").asText()) ? ask.path("since").asLong(-1) : -1;
      } catch (Exception e) {
        msg.fail(400, "expected {\"since\": seq, \"incarnation\": id}");
        return;
      }
      msg.reply(WireCodec.toJson(SampleCodec.encode(localNode, local.incarnation(), local.since(since),
          localGpus.get())));
    });
    return consumer.completion();
  }

  public Future<Void> close() {
    return consumer == null ? Future.succeededFuture() : consumer.unregister();
  }

  /** Asks each of {@code alive} for its samples since the last one seen; completes when all answered or timed out. */
  public CompletionStage<Void> refresh(Collection<String> alive) {
    List<Future<Void>> asks = new ArrayList<>();
    for (String node : alive) {
      Known known = known(node);
      if (node.equals(localNode)) {
        store(node, local.incarnation(), local.since(known.lastSeq), localGpus.get());
        continue;
      }
      String body = WireCodec.toJson(Map.of("since", known.lastSeq, "incarnation", known.incarnation));
      asks.add(vertx.eventBus().<String>request(address(node), body, new DeliveryOptions().setSendTimeout(ASK_TIMEOUT_MS))
          .map(reply -> {
            try {
              JsonNode o = JSON.readTree(reply.body());
              store(node, o.path("incarnation").asText(), SampleCodec.decode(o), o.get("gpus"));
            } catch (Exception e) {
              // A garbled answer is as good as none: the node's earlier samples stay.
            }
            return (Void) null;
          })
          .otherwise((Void) null));
    }
    return Future.join(asks).<Void>mapEmpty().otherwiseEmpty().toCompletionStage();
  }

  /** Where this node's samples stand: the last number seen and the incarnation it belongs to. */
  private record Known(long lastSeq, String incarnation) {
  }

  private synchronized Known known(String node) {
    NodeSamples s = nodes.get(node);
    return s == null || s.bySeq.isEmpty() ? new Known(-1, s == null ? "" : s.incarnation)
        : new Known(s.bySeq.lastKey(), s.incarnation);
  }

  private synchronized void store(String node, String incarnation, List<Sample> samples, JsonNode gpus) {
    NodeSamples s = nodes.computeIfAbsent(node, k -> new NodeSamples());
    if (!s.incarnation.equals(incarnation)) {
      s.bySeq.clear(); // the node restarted: its numbers began again, and its answer holds all it has
      s.incarnation = incarnation;
    }
    for (Sample x : samples) {
      s.bySeq.put(x.seq(), x);
    }
    s.gpus = gpus;
    while (s.bySeq.size() > windowSeconds) {
      s.bySeq.pollFirstEntry();
    }
  }

  /** The GPU samples {@code node} last sent, or null. */
  public synchronized JsonNode gpus(String node) {
    NodeSamples s = nodes.get(node);
    return s == null ? null : s.gpus;
  }

  /**
   * The series of the {@code window} seconds ending with epoch second {@code end}: {@code {"start", "end",
   * "step": 1, "models": {model: {"rate": [req/s], "errors": [err/s], "p50": [ms|null], "p99": [ms|null]}}}},
   * one value per second; every name of {@code alsoModels} appears, with zeros if it had no requests.
   */
  public synchronized ObjectNode render(long end, int window, Set<String> alsoModels) {
    long start = end - window + 1;
    Map<String, Acc[]> byModel = new TreeMap<>();
    alsoModels.forEach(m -> byModel.put(m, new Acc[window]));
    for (NodeSamples s : nodes.values()) {
      s.bySeq.values().removeIf(x -> x.second() <= end - windowSeconds);
      for (Sample x : s.bySeq.values()) {
        if (x.second() < start || x.second() > end) {
          continue;
        }
        int i = (int) (x.second() - start);
        x.models().forEach((model, d) -> {
          Acc[] accs = byModel.computeIfAbsent(model, k -> new Acc[window]);
          (accs[i] == null ? accs[i] = new Acc() : accs[i]).add(d);
        });
      }
    }
    ObjectNode o = JSON.createObjectNode().put("start", start).put("end", end).put("step", 1);
    ObjectNode out = o.putObject("models");
    byModel.forEach((model, accs) -> {
      ObjectNode m = out.putObject(model);
      ArrayNode rate = m.putArray("rate");
      ArrayNode errors = m.putArray("errors");
      ArrayNode p50 = m.putArray("p50");
      ArrayNode p99 = m.putArray("p99");
      for (Acc a : accs) {
        rate.add(a == null ? 0 : a.n);
        errors.add(a == null ? 0 : a.e);
        if (a == null || a.n == 0) {
          p50.addNull();
          p99.addNull();
        } else {
          p50.add(quantileMillis(a.buckets, a.n, 0.50));
          p99.add(quantileMillis(a.buckets, a.n, 0.99));
        }
      }
    });
    return o;
  }

  /**
   * The "Generative models" panel over the {@code seconds} ending with epoch second {@code end} ({@link LlmPanel}).
   */
  public synchronized ObjectNode llm(long end, int seconds) {
    return LlmPanel.render(LlmPanel.of(nodes.values().stream().map(s -> s.bySeq).toList()), end, seconds);
  }

  /** One model's requests in one second, all nodes (and all samples of that second) added up. */
  private static final class Acc {
    long n;
    long e;
    final TreeMap<Double, double[]> buckets = new TreeMap<>(); // upper bound → {lower bound, count}

    void add(ModelDelta d) {
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
