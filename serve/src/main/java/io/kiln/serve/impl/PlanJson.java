package io.kiln.serve.impl;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.runtime.Resources;
import io.kiln.serve.Plan;
import java.util.List;
import java.util.Map;

/** Renders a {@link Plan} as a JSON tree ({@code kiln deploy --dry-run --json}, the management API). */
public final class PlanJson {

  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  private PlanJson() {
  }

  public static ObjectNode render(Plan plan) {
    ObjectNode root = JSON.objectNode();
    root.put("ok", plan.ok());
    strings(root.putArray("problems"), plan.allProblems());
    ArrayNode deployments = root.putArray("deployments");
    for (Plan.DeploymentPlan d : plan.deployments()) {
      ObjectNode o = deployments.addObject();
      o.put("deployment", d.id());
      o.put("name", d.name());
      o.put("version", d.version());
      o.put("workers", d.totalWorkers());
      ArrayNode placements = o.putArray("placements");
      for (Plan.Placement p : d.placements()) {
        ObjectNode po = placements.addObject();
        po.put("node", p.nodeId());
        po.put("address", p.address());
        po.put("workers", p.workers());
        po.put("max_workers", p.maxWorkers());
        fits(po, "fits_total", p.fitsTotal());
        fits(po, "fits_available", p.fitsAvailable());
        po.set("per_worker", SpecJsonWriter.resources(p.perWorker()));
        po.set("needed", quantities(p.needed()));
        po.set("available", quantities(p.available()));
        po.put("pool_manager", p.poolManager());
        strings(po.putArray("worker_names"), p.workerNames());
      }
      ArrayNode skipped = o.putArray("skipped");
      d.skipped().forEach(s -> skipped.addObject().put("node", s.nodeId()).put("reason", s.reason()));
      strings(o.putArray("problems"), d.problems());
      strings(o.putArray("warnings"), d.warnings());
      if (d.noFit() != null) {
        o.putObject("no_fit").put("reason", d.noFit().reason()).put("needs", d.noFit().needs());
      }
    }
    ArrayNode nodes = root.putArray("nodes");
    for (Plan.NodeLoad n : plan.nodes()) {
      ObjectNode o = nodes.addObject();
      o.put("node", n.nodeId());
      o.put("address", n.address());
      o.put("alive", n.alive());
      o.set("total", SpecJsonWriter.resources(n.total()));
      o.set("available", SpecJsonWriter.resources(n.available()));
      o.set("planned", quantities(n.planned()));
      strings(o.putArray("deployments"), n.deployments());
    }
    strings(root.putArray("cluster_problems"), plan.problems());
    return root;
  }

  /** Unlimited (a worker asking for nothing) is written as null. */
  private static void fits(ObjectNode o, String key, int n) {
    if (n == Integer.MAX_VALUE) {
      o.putNull(key);
    } else {
      o.put(key, n);
    }
  }

  private static ObjectNode quantities(Map<String, Double> q) {
    ObjectNode o = JSON.objectNode();
    q.entrySet().stream().sorted(Map.Entry.comparingByKey())
        .forEach(e -> SpecJsonWriter.putUnits(o, e.getKey(), Math.round(e.getValue() * Resources.SCALE)));
    return o;
  }

  private static void strings(ArrayNode into, List<String> values) {
    values.forEach(into::add);
  }
}
