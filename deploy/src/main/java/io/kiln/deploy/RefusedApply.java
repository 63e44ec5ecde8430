package io.kiln.deploy;

import io.kiln.serve.Problem;
import io.kiln.serve.ServeController;
import java.util.ArrayList;
import java.util.List;

/**
 * How the commands print an apply that was refused: a line naming the file and why (invalid, or deployments no node
 * of the cluster could ever host), then one line per problem, {@code file:line:column: path: message} for the file's
 * own and {@code path: message} for the cluster's (they are at no line of the file). Stateless.
 */
final class RefusedApply {

  private RefusedApply() {
  }

  /**
   * The lines to print.
   *
   * @param file the file as the user named it
   * @param where how the cluster is named in the first line where only the cluster refused it ("this cluster")
   */
  static List<String> lines(Object file, List<Problem> problems, String where) {
    List<String> out = new ArrayList<>();
    boolean placementOnly = problems.stream().allMatch(RefusedApply::placement);
    out.add(file + (placementOnly ? " cannot run on " + where : " is invalid") + "; nothing was applied:");
    for (Problem p : problems) {
      out.add("  " + (placement(p) ? (p.path().isEmpty() ? "" : p.path() + ": ") + p.message() : p.toString()));
    }
    return out;
  }

  private static boolean placement(Problem p) {
    return ServeController.CLUSTER.equals(p.file());
  }
}
