package io.kiln.serve.yaml;

import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * "Did you mean" for near misses: typos, wrong case, camelCase or kebab-case for snake_case; and, for fields of
 * Ray Serve's config (which many users write from habit), where Kiln keeps that setting ({@link #foreign}).
 */
public final class Suggestions {

  /**
   * Ray Serve's deployment, application and {@code @serve.batch} fields, with where Kiln keeps the same setting.
   * Checked by exact name, before near misses: {@code num_replicas} must not read as a typo of anything.
   */
  private static final Map<String, String> RAY_SERVE = Map.ofEntries(
      Map.entry("num_replicas", "Kiln counts workers per node: pool.workers_per_node, or pool.num_workers for a"
          + " cluster-wide total"),
      Map.entry("max_replicas_per_node", "Kiln counts workers per node: pool.workers_per_node (with autoscaling,"
          + " autoscaling.max_workers)"),
      Map.entry("ray_actor_options", "what each worker reserves is pool.worker_resources, e.g. {CPU: 1, GPU: 1}"),
      Map.entry("num_cpus", "what each worker reserves is pool.worker_resources, e.g. {CPU: 1}"),
      Map.entry("num_gpus", "what each worker reserves is pool.worker_resources, e.g. {GPU: 1}"),
      Map.entry("max_ongoing_requests", "a worker runs one batch at a time: batching.max_batch_size bounds it,"
          + " queue.max_queued bounds what waits on each node's pool"),
      Map.entry("max_concurrent_queries", "a worker runs one batch at a time: batching.max_batch_size bounds it,"
          + " queue.max_queued bounds what waits on each node's pool"),
      Map.entry("max_queued_requests", "queue.max_queued bounds what waits on each node's pool"),
      Map.entry("autoscaling_config", "Kiln's section is autoscaling (min_workers, max_workers,"
          + " target_ongoing_per_worker; per node)"),
      Map.entry("min_replicas", "autoscaling.min_workers (per node)"),
      Map.entry("max_replicas", "autoscaling.max_workers (per node)"),
      Map.entry("initial_replicas", "a pool starts at autoscaling.min_workers"),
      Map.entry("target_ongoing_requests", "autoscaling.target_ongoing_per_worker"),
      Map.entry("target_num_ongoing_requests_per_replica", "autoscaling.target_ongoing_per_worker"),
      Map.entry("upscale_delay_s", "autoscaling.upscale_delay_ms (milliseconds)"),
      Map.entry("downscale_delay_s", "autoscaling.downscale_delay_ms (milliseconds)"),
      Map.entry("user_config", "a Python model's settings go in model.python.config"),
      Map.entry("runtime_env", "a Python model's environment is model.python.env (and model.python.interpreter)"),
      Map.entry("import_path", "Kiln loads a model folder: model.uri (for Python, its model.py and"
          + " model.python.class)"),
      Map.entry("route_prefix", "Kiln serves every deployment at /v2/models/<name>: there is no route prefix"),
      Map.entry("max_batch_size", "batching is its own section: batching.max_batch_size"),
      Map.entry("batch_wait_timeout_s", "batching.max_batch_delay_ms (milliseconds)"),
      Map.entry("health_check_period_s", "health.period_ms (milliseconds)"),
      Map.entry("health_check_timeout_s", "health.timeout_ms (milliseconds)"),
      Map.entry("graceful_shutdown_timeout_s", "draining belongs to the node: kiln start --drain-grace"),
      Map.entry("applications", "a Kiln file lists deployments at the top level (deployments: [...])"));

  private Suggestions() {
  }

  /** The candidate {@code given} most likely meant, if one is close enough. */
  public static Optional<String> closest(String given, Collection<String> candidates) {
    if (given.length() > 64) {
      return Optional.empty();
    }
    String g = normalise(given);
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String c : candidates) {
      String n = normalise(c);
      int d = n.equals(g) ? 0 : distance(g, n);
      if (d < bestDistance) {
        best = c;
        bestDistance = d;
      }
    }
    // A third of the length, at least one edit and at most three: "ngine" -> "engine", not "uri" -> "name".
    int allowed = Math.max(1, Math.min(3, g.length() / 3));
    return best != null && bestDistance <= allowed ? Optional.of(best) : Optional.empty();
  }

  /**
   * Where Kiln keeps the setting of a Ray Serve field named {@code given}, unless {@code known} (the fields of the
   * mapping being read) has one of that name; e.g. {@code num_replicas} gives the per-node worker counts.
   */
  public static Optional<String> foreign(String given, Collection<String> known) {
    return known.contains(given) ? Optional.empty() : Optional.ofNullable(RAY_SERVE.get(given));
  }

  /** {@code "; did you mean 'x'?"} or an empty string. */
  public static String didYouMean(String given, Collection<String> candidates) {
    return closest(given, candidates).map(s -> "; did you mean '" + s + "'?").orElse("");
  }

  private static String normalise(String s) {
    return s.toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
  }

  /** Optimal string alignment distance: edits, where swapping two neighbours counts once. */
  static int distance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }
}
