package io.kiln.serve.impl;

import io.kiln.serve.Plan;
import java.util.ArrayList;
import java.util.List;

/** Renders a {@link Plan} as aligned text tables for {@code kiln deploy --dry-run}. Stateless. */
public final class PlanText {

  private PlanText() {
  }

  public static String render(Plan plan) {
    StringBuilder out = new StringBuilder();
    long alive = plan.nodes().stream().filter(Plan.NodeLoad::alive).count();
    out.append("Plan: ").append(count(plan.deployments().size(), "deployment")).append(" on ")
        .append(count(plan.nodes().size(), "node")).append(" (").append(alive).append(" alive)\n");

    for (Plan.DeploymentPlan d : plan.deployments()) {
      out.append('\n').append(d.id()).append(": ").append(count(d.totalWorkers(), "worker")).append(" on ")
          .append(count(d.placements().size(), "node")).append(perNode(d)).append('\n');
      if (!d.placements().isEmpty()) {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"NODE", "ADDRESS", "WORKERS", "FITS", "PER WORKER", "NEEDED", "AVAILABLE",
            "POOL MANAGER"});
        for (Plan.Placement p : d.placements()) {
          String workers = p.maxWorkers() != p.workers() ? p.workers() + " (max " + p.maxWorkers() + ")"
              : Integer.toString(p.workers());
          rows.add(new String[] {p.nodeId(), p.address(), workers, fits(p.fitsTotal()), p.perWorker().toString(),
              Quantities.format(p.needed()), Quantities.format(p.available()), p.poolManager()});
        }
        table(out, rows);
      }
      for (Plan.SkippedNode s : d.skipped()) {
        out.append("  skipped ").append(s.nodeId()).append(": ").append(s.reason()).append('\n');
      }
      d.problems().forEach(p -> out.append("  PROBLEM: ").append(p).append('\n'));
      if (d.noFit() != null) {
        out.append("  no node can ever host one of its workers, whatever is free: it needs ").append(d.noFit().needs())
            .append('\n');
      }
      d.warnings().forEach(w -> out.append("  warning: ").append(w).append('\n'));
    }

    out.append("\nNodes\n");
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"NODE", "ALIVE", "TOTAL", "AVAILABLE", "PLANNED", "DEPLOYMENTS"});
    for (Plan.NodeLoad n : plan.nodes()) {
      rows.add(new String[] {n.nodeId(), n.alive() ? "yes" : "no", n.total().toString(), n.available().toString(),
          Quantities.format(n.planned()), n.deployments().isEmpty() ? "-" : String.join(", ", n.deployments())});
    }
    table(out, rows);
    plan.problems().forEach(p -> out.append("  PROBLEM: ").append(p).append('\n'));

    List<String> all = plan.allProblems();
    int workers = plan.deployments().stream().mapToInt(Plan.DeploymentPlan::totalWorkers).sum();
    out.append('\n');
    if (all.isEmpty()) {
      out.append("OK: ").append(count(workers, "worker")).append(" in ")
          .append(count(plan.deployments().size(), "deployment")).append('\n');
    } else {
      out.append(count(all.size(), "problem")).append(":\n");
      all.forEach(p -> out.append("  ").append(p).append('\n'));
    }
    return out.toString();
  }

  /**
   * Worker counts are per node, which users coming from Ray Serve's cluster-wide {@code num_replicas} misread: say it,
   * {@code " (2 per node × 3 nodes)"}, or {@code " (per node: 2 + 2 + 1)"} where the nodes differ.
   */
  static String perNode(Plan.DeploymentPlan d) {
    List<Plan.Placement> ps = d.placements();
    if (ps.isEmpty()) {
      return "";
    }
    if (ps.stream().allMatch(p -> p.workers() == ps.get(0).workers())) {
      return " (" + ps.get(0).workers() + " per node \u00d7 " + count(ps.size(), "node") + ")";
    }
    return " (per node: " + String.join(" + ", ps.stream().map(p -> Integer.toString(p.workers())).toList()) + ")";
  }

  private static String fits(int n) {
    return n == Integer.MAX_VALUE ? "any" : Integer.toString(n);
  }

  private static String count(long n, String noun) {
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  private static void table(StringBuilder out, List<String[]> rows) {
    int[] widths = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder("  ");
      for (int i = 0; i < row.length; i++) {
        line.append(row[i]);
        if (i < row.length - 1) {
          line.append(" ".repeat(widths[i] - row[i].length() + 2));
        }
      }
      out.append(line.toString().stripTrailing()).append('\n');
    }
  }
}
