package io.kiln.serve.yaml;

import io.kiln.runtime.Resources;
import java.math.BigDecimal;
import java.util.List;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * A section of resources by name (a pool's {@code worker_resources}, a pipeline step's {@code resources}) and a name
 * that stands for one (a step's {@code node_with_resource}), read by one rule wherever they appear: a name a node can
 * declare ({@code --resources}: 1 to 128 characters), never a well-known one in the wrong case ({@code cpu} for
 * {@code CPU}: a node has no {@code cpu}, so a worker or step asking for it would never be placed), and amounts in
 * {@link Resources}' own rules and words (non-negative, 1e-4 resolution, whole GPUs above 1; {@code memory} in bytes).
 */
public final class ResourcesSection {

  private static final List<String> WELL_KNOWN = List.of(Resources.CPU, Resources.GPU, Resources.MEMORY);

  private ResourcesSection() {
  }

  /**
   * The resources of section {@code r}, {@code absent} when there is no section; null if anything in it is wrong
   * (each problem reported at its line and column).
   */
  public static Resources read(Reading reading, MappingReader r, Resources absent) {
    if (!r.present()) {
      return r.valid() ? absent : null;
    }
    Problems problems = reading.problems();
    Resources resources = Resources.NONE;
    boolean ok = true;
    for (NodeTuple t : r.entries()) {
      String key = ((ScalarNode) t.getKeyNode()).getValue();
      String path = r.path(key);
      String wrong = nameProblem(key);
      if (wrong != null) {
        problems.at(t.getKeyNode(), path, wrong);
        ok = false;
        continue;
      }
      BigDecimal amount = reading.decimal(t.getValueNode(), path, Long.MIN_VALUE, Long.MAX_VALUE);
      if (amount == null) {
        ok = false;
        continue;
      }
      try {
        resources = resources.with(key, amount.doubleValue());
      } catch (IllegalArgumentException e) {
        problems.at(t.getValueNode(), path, e.getMessage());
        ok = false;
      }
    }
    return ok ? resources : null;
  }

  /**
   * Checks that {@code name}, at {@code node}, can name a node's resource; reports why not.
   *
   * @return whether it can
   */
  public static boolean checkName(Problems problems, Node node, String path, String name) {
    String wrong = nameProblem(name);
    if (wrong != null) {
      problems.at(node, path, wrong);
    }
    return wrong == null;
  }

  private static String nameProblem(String name) {
    try {
      Resources.checkKey(name);
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
    for (String known : WELL_KNOWN) {
      if (known.equalsIgnoreCase(name) && !known.equals(name)) {
        return "unknown resource '" + name + "'; did you mean '" + known + "'? (resource names are case-sensitive)";
      }
    }
    return null;
  }
}
