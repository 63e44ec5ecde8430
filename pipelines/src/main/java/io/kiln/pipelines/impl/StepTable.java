package io.kiln.pipelines.impl;

import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.serve.yaml.Suggestions;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * What the reader of one pipeline's steps knows of all of them: every step's name and kind from the start, so that a
 * reference to a later step is told apart from one to an unknown step, and each step's placement and action once it
 * has been read. Not thread-safe: one instance per pipeline, filled in step order.
 */
final class StepTable implements GenerateReader.Steps {

  /** The keys that say what a step does; a step has exactly one of them. */
  static final List<String> KINDS = List.of("fetch", "infer", "webhook", "generate", "class");

  private final InferModels models;
  private final List<String> names = new ArrayList<>();
  private final List<String> kinds = new ArrayList<>();
  private final List<StepPlacement> placements = new ArrayList<>();
  private final List<StepAction> actions = new ArrayList<>(); // null: not read yet, or had problems

  /** Takes each step's name and kind from its node as written, without reporting anything (the step does that). */
  StepTable(List<Node> nodes, InferModels models) {
    this.models = models;
    for (Node n : nodes) {
      String name = null;
      List<String> kindsHere = new ArrayList<>();
      if (n instanceof MappingNode mn) {
        for (var t : mn.getValue()) {
          if (t.getKeyNode() instanceof ScalarNode k) {
            if (k.getValue().equals("name") && t.getValueNode() instanceof ScalarNode v) {
              name = v.getValue();
            } else if (KINDS.contains(k.getValue())) {
              kindsHere.add(k.getValue());
            }
          }
        }
      }
      names.add(name);
      kinds.add(kindsHere.size() == 1 ? kindsHere.get(0) : null); // null: unknown, reported with the step
      placements.add(null);
      actions.add(null);
    }
  }

  /** Records what step {@code i} was read as; {@code action} null when it had problems. */
  void read(int i, StepPlacement placement, StepAction action) {
    placements.set(i, placement);
    actions.set(i, action);
  }

  /** Step {@code k}'s name as written, or null. */
  String name(int k) {
    return names.get(k);
  }

  /** Step {@code k}'s kind (one of {@link #KINDS}), or null when it has none or several. */
  String kind(int k) {
    return kinds.get(k);
  }

  @Override
  public int indexOf(String name) {
    return names.indexOf(name);
  }

  @Override
  public List<String> before(int i) {
    return names.subList(0, i).stream().filter(Objects::nonNull).toList();
  }

  /** The fields of earlier step {@code k}'s result: empty if it had problems, null if any may be there. */
  @Override
  public Set<String> fields(int k) {
    StepAction a = actions.get(k);
    if (a == null) {
      return Set.of();
    }
    return StepReferences.fields(a.kind(), a instanceof StepAction.Infer infer
        ? models.outputs(infer.deployment(), infer.graph()) : null);
  }

  /** Whether a step before {@code i} has no kind, or several (reported with it). */
  boolean unknownKindBefore(int i) {
    return kinds.subList(0, i).contains(null);
  }

  /** Follows same_node_as chains of steps already read. */
  int anchor(int k) {
    int at = k;
    for (int hops = 0; at >= 0 && hops <= names.size(); hops++) {
      StepPlacement pl = placements.get(at);
      if (pl == null || pl.kind() != StepPlacement.Kind.SAME_NODE_AS) {
        return at;
      }
      int next = names.indexOf(pl.target());
      if (next < 0 || next >= at) {
        return at;
      }
      at = next;
    }
    return at;
  }

  /** What to add to a problem with a step name {@code given} at step {@code i}: a suggestion and the earlier steps. */
  String hint(String given, int i) {
    List<String> earlier = before(i);
    return Suggestions.didYouMean(given, earlier)
        + (earlier.isEmpty() ? "; it is the first step" : "; earlier steps: " + String.join(", ", earlier));
  }
}
