package io.kiln.deploy.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The files of {@code deploy/monitoring/}, and the metric names and queries they use. */
final class MonitoringFiles {

  static final Path DIR = ServingCluster.repositoryRoot().resolve("deploy/monitoring");
  static final Path PROMETHEUS = DIR.resolve("prometheus");
  static final Path RULES = PROMETHEUS.resolve("rules/kiln-alerts.yml");
  static final Path RULE_TESTS = PROMETHEUS.resolve("rules/kiln-alerts.test.yml");
  static final Path DASHBOARD = DIR.resolve("grafana/kiln-dashboard.json");

  // A Kiln metric name anywhere (label names and values never start with kiln_); "up" as a selector.
  private static final Pattern KILN_NAME = Pattern.compile("\\bkiln_[a-zA-Z0-9_:]+");
  private static final Pattern UP = Pattern.compile("\\bup\\{");
  private static final Pattern SAMPLE_NAME = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]");

  private MonitoringFiles() {
  }

  /** Every Kiln metric name the dashboard, the rules and the rules' tests mention (and "up" where they use it). */
  static Set<String> referencedNames() {
    Set<String> names = new TreeSet<>();
    for (Path f : List.of(DASHBOARD, RULES, RULE_TESTS)) {
      String text = read(f);
      Matcher m = KILN_NAME.matcher(text);
      while (m.find()) {
        names.add(m.group());
      }
      if (UP.matcher(text).find()) {
        names.add("up");
      }
    }
    return names;
  }

  /** Whether {@code name} is a text-generation model's (the gateway's {@code kiln_llm_*}, the decoder's). */
  static boolean generative(String name) {
    return name.startsWith("kiln_llm_") || name.startsWith("kiln_decoder_");
  }

  /** The dashboard's PromQL queries (every target's expr), Grafana's variables left in. */
  static List<String> dashboardQueries() {
    List<String> out = new ArrayList<>();
    collect(json(DASHBOARD).path("panels"), out);
    return out;
  }

  private static void collect(JsonNode node, List<String> out) {
    if (node.isObject()) {
      JsonNode expr = node.get("expr");
      if (expr != null && expr.isTextual()) {
        out.add(expr.asText());
      }
      node.fields().forEachRemaining(e -> collect(e.getValue(), out));
    } else if (node.isArray()) {
      node.forEach(n -> collect(n, out));
    }
  }

  /** A dashboard query as Prometheus would get it from Grafana: its variables replaced by plain values. */
  static String asPromql(String query) {
    return query.replace("$__rate_interval", "1m").replace("$job", "kiln").replace("$model", ".*")
        .replace("$deployment", ".*");
  }

  /** The names of the samples in a Prometheus text exposition. */
  static Set<String> sampleNames(String exposition) {
    Set<String> names = new TreeSet<>();
    exposition.lines().filter(l -> !l.startsWith("#")).forEach(l -> {
      Matcher m = SAMPLE_NAME.matcher(l);
      if (m.find()) {
        names.add(m.group(1));
      }
    });
    return names;
  }

  static JsonNode json(Path f) {
    try {
      return new ObjectMapper().readTree(f.toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static String read(Path f) {
    try {
      return Files.readString(f);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
