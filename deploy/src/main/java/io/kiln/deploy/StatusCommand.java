package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kiln status [--json]}: nodes, deployments and actors, for a person or (with --json) a script. */
@Command(name = "status", description = "Show nodes, deployments and actors.")
final class StatusCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--json", description = "print the status as JSON")
  boolean json;

  @Mixin
  ClientOptions client = new ClientOptions();

  @Override
  public Integer call() throws Exception {
    JsonNode status = client.client().get("api/v1/status");
    if (json) {
      spec.commandLine().getOut().println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(status));
    } else {
      spec.commandLine().getOut().print(render(status));
    }
    return 0;
  }

  static String render(JsonNode s) {
    StringBuilder out = new StringBuilder();
    out.append("NODES (leader: ").append(s.path("leader").asText("?")).append(")\n");
    List<List<String>> rows = new ArrayList<>();
    rows.add(List.of("NODE", "ADDRESS", "ALIVE", "RESOURCES (available / total)", "LABELS"));
    for (JsonNode n : s.path("nodes")) {
      rows.add(List.of(n.path("id").asText(), n.path("address").asText(), n.path("alive").asBoolean() ? "yes" : "no",
          resources(n.path("available"), n.path("total")), labels(n.path("labels"))));
    }
    table(out, rows);
    out.append("\nDEPLOYMENTS\n");
    rows = new ArrayList<>();
    rows.add(List.of("NAME", "SERVING", "DESIRED", "PHASE", "POOLS READY", "WORKERS", "QUEUED", "MESSAGE"));
    for (JsonNode d : s.path("deployments")) {
      int ready = 0;
      int pools = 0;
      int workers = 0;
      int target = 0;
      int queued = 0;
      for (JsonNode p : d.path("pools")) {
        pools++;
        ready += p.path("ready").asBoolean() ? 1 : 0;
        workers += p.path("workers").asInt();
        target += p.path("targetWorkers").asInt();
        queued += p.path("queueDepth").asInt();
      }
      rows.add(List.of(d.path("name").asText(), d.path("servingVersion").asText("-"), d.path("version").asText(),
          d.path("phase").asText(), ready + "/" + pools, workers + "/" + target, Integer.toString(queued),
          d.path("message").asText("")));
    }
    table(out, rows);
    out.append("\nACTORS (named)\n");
    rows = new ArrayList<>();
    rows.add(List.of("NAMESPACE", "NAME", "NODE", "STATE", "RESTARTS"));
    for (JsonNode a : s.path("actors")) {
      rows.add(List.of(a.path("namespace").asText(), a.path("name").asText(), a.path("nodeId").asText("-"),
          a.path("state").asText(), a.path("restarts").asText("0")));
    }
    table(out, rows);
    return out.toString();
  }

  private static String resources(JsonNode available, JsonNode total) {
    List<String> parts = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = total.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      parts.add(e.getKey() + " " + num(available.path(e.getKey()).asDouble(0)) + "/" + num(e.getValue().asDouble()));
    }
    return String.join(", ", parts);
  }

  private static String labels(JsonNode labels) {
    List<String> parts = new ArrayList<>();
    labels.fields().forEachRemaining(e -> parts.add(e.getKey() + "=" + e.getValue().asText()));
    return parts.isEmpty() ? "-" : String.join(",", parts);
  }

  private static String num(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  private static void table(StringBuilder out, List<List<String>> rows) {
    if (rows.size() == 1) {
      out.append("  (none)\n");
      return;
    }
    int cols = rows.get(0).size();
    int[] width = new int[cols];
    for (List<String> r : rows) {
      for (int i = 0; i < cols; i++) {
        width[i] = Math.max(width[i], r.get(i).length());
      }
    }
    for (List<String> r : rows) {
      StringBuilder line = new StringBuilder("  ");
      for (int i = 0; i < cols; i++) {
        line.append(i == cols - 1 ? r.get(i) : pad(r.get(i), width[i] + 2));
      }
      out.append(line.toString().stripTrailing()).append('\n');
    }
  }

  private static String pad(String s, int w) {
    return s + " ".repeat(Math.max(0, w - s.length()));
  }
}
