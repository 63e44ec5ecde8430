package io.kiln.deploy.node;

import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * What a node's warm-up did (see {@link WarmupOptions}): the requests answered per protocol, those that
 * failed, how long it took from start to the node's readiness, and the problem that cut it short, if any.
 * The same counts are on {@code /metrics} as {@code kiln_warmup_requests_total{protocol, outcome}}.
 *
 * @param ran whether a warm-up ran at all (false when it was off)
 * @param model the internal model it served, {@code _warmup-<random>} (gone once the node is ready); "" when off
 * @param answered requests answered 200 / OK, by protocol (every protocol present)
 * @param failed requests that failed, by protocol (every protocol present)
 * @param took from the start of the warm-up until its pool was gone
 * @param settled whether the (last phase's) traffic ended because its throughput had levelled off and the JIT had
 *     caught up with it (its compilation had gone quiet, where the JVM reports compilation time) rather than at
 *     the time or request budget
 * @param problem why the warm-up failed or fell short, or null; the node went ready anyway
 * @param models the user's deployments warmed (see {@link WarmupOptions#deployments()}), in order, each with
 *     its own counts and problem (skipped, not loaded in time, requests failed); their requests are in
 *     {@code answered} and {@code failed} too
 */
public record WarmupReport(boolean ran, String model, Map<Protocol, Long> answered, Map<Protocol, Long> failed, Duration took,
                           boolean settled, String problem, List<ModelWarmup> models) {

  /**
   * One user deployment's warm-up.
   *
   * @param model the deployment (model) name
   * @param answered its warm-up requests answered 200 / OK, all protocols together
   * @param failed its warm-up requests that failed
   * @param problem why it was skipped or fell short, or null
   */
  public record ModelWarmup(String model, long answered, long failed, String problem) {
    public ModelWarmup {
      Objects.requireNonNull(model, "model");
    }
  }

  /** A report without user deployments. */
  public WarmupReport(boolean ran, String model, Map<Protocol, Long> answered, Map<Protocol, Long> failed, Duration took,
                      boolean settled, String problem) {
    this(ran, model, answered, failed, took, settled, problem, List.of());
  }

  /** The front ends a warm-up drives, as the {@code protocol} tag spells them. */
  public enum Protocol {
    HTTP_JSON, HTTP_BINARY, GRPC;

    public String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public WarmupReport {
    Objects.requireNonNull(model, "model");
    answered = complete(answered);
    failed = complete(failed);
    Objects.requireNonNull(took, "took");
    models = List.copyOf(models);
  }

  /** The report of a node that did not warm up. */
  public static WarmupReport off() {
    return new WarmupReport(false, "", Map.of(), Map.of(), Duration.ZERO, false, null);
  }

  /** Whether it ran and every protocol was answered without a problem. */
  public boolean warmed() {
    return ran && problem == null;
  }

  public long answered(Protocol p) {
    return answered.get(p);
  }

  /** Requests answered, all protocols together. */
  public long totalAnswered() {
    return answered.values().stream().mapToLong(Long::longValue).sum();
  }

  /** One line for the log. */
  public String describe() {
    if (!ran) {
      return "no warm-up";
    }
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%.1f s, requests answered:", took.toMillis() / 1e3));
    for (Protocol p : Protocol.values()) {
      b.append(' ').append(p.tag()).append(' ').append(answered.get(p));
    }
    long bad = failed.values().stream().mapToLong(Long::longValue).sum();
    if (bad > 0) {
      b.append(", failed ").append(bad);
    }
    b.append(settled ? "; flat and the JIT caught up" : "; not flat or the JIT still compiling when the budget ran out");
    for (ModelWarmup m : models) {
      b.append("; model ").append(m.model()).append(' ').append(m.answered()).append(" answered");
      if (m.failed() > 0) {
        b.append(", ").append(m.failed()).append(" failed");
      }
      if (m.problem() != null) {
        b.append(" (").append(m.problem()).append(')');
      }
    }
    return problem == null ? b.toString() : b.append("; ").append(problem).toString();
  }

  private static Map<Protocol, Long> complete(Map<Protocol, Long> m) {
    EnumMap<Protocol, Long> out = new EnumMap<>(Protocol.class);
    for (Protocol p : Protocol.values()) {
      out.put(p, m.getOrDefault(p, 0L));
    }
    return Map.copyOf(out);
  }
}
