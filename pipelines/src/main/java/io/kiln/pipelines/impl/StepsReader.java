package io.kiln.pipelines.impl;

import io.kiln.runtime.Resources;
import io.kiln.runtime.RetryPolicy;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import io.kiln.pipelines.InputFormat;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.pipelines.StepSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * Reads the steps of one pipeline, reporting every problem with its position. It knows every step's name,
 * kind and position up front, so a reference to an unknown step is told apart from one to a later step.
 * Not thread-safe: one instance per pipeline.
 */
final class StepsReader {

  private static final List<String> KINDS = List.of("fetch", "infer", "webhook", "generate", "class");
  private static final Pattern RESOURCE_KEY = Pattern.compile("[A-Za-z_][A-Za-z0-9_.-]{0,63}");
  private static final Pattern CLASS_NAME = Pattern.compile("([A-Za-z_$][A-Za-z0-9_$]*\\.)*[A-Za-z_$][A-Za-z0-9_$]*");

  private final Reading reading;
  private final Problems problems;
  private final InferModels models;
  private final StepClasses classes;
  private final List<Node> nodes;
  private final String path;
  private final String source;
  private final List<String> names = new ArrayList<>();
  private final List<String> kinds = new ArrayList<>();
  private final List<StepPlacement> placements = new ArrayList<>();
  private final List<StepAction> actions = new ArrayList<>(); // null: not read yet, or had problems

  /** @param source the YAML text the nodes come from, or null */
  StepsReader(Reading reading, InferModels models, StepClasses classes, List<Node> nodes, String path, String source) {
    this.reading = reading;
    this.problems = reading.problems();
    this.models = models;
    this.classes = classes;
    this.nodes = nodes;
    this.path = path;
    this.source = source;
    // Names and kinds first, so a reference to a later or unknown step can be told apart.
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

  StepSpec step(int i) {
    String p = path + "[" + i + "]";
    int before = problems.count();
    MappingReader m = reading.mapping(nodes.get(i), p);
    if (!m.valid()) {
      return null;
    }
    String name = m.requiredText("name");
    if (name != null) {
      String problem = StepSpec.nameProblem(name);
      if (problem != null) {
        problems.at(m.at("name"), m.path("name"), problem);
      } else {
        int first = names.indexOf(name);
        if (first >= 0 && first < i) {
          problems.at(m.at("name"), m.path("name"), "duplicate step name '" + name + "' (also " + path + "["
              + first + "])");
        }
      }
    }
    List<String> present = KINDS.stream().filter(m::has).toList();
    Resources resources = resources(m.section("resources"));
    StepPlacement placement = placement(m, i);
    Integer retries = m.integer("retries", RetryPolicy.STEP_RETRY.maxRetries(), 0, StepSpec.MAX_RETRIES);
    Duration timeout = m.millis("timeout_ms", Duration.ofMillis(StepSpec.DEFAULT_TIMEOUT_MS), true);
    StepAction action = null;
    if (present.size() != 1) {
      problems.at(present.isEmpty() ? m.node() : m.keyAt(present.get(1)), p, present.isEmpty()
          ? "a step needs one of " + String.join(", ", KINDS) + " (what it does)"
          : "a step does one thing: it has both '" + present.get(0) + "' and '" + present.get(1) + "'");
    } else {
      action = switch (present.get(0)) {
        case "fetch" -> fetch(m);
        case "infer" -> infer(m, i, placement);
        case "webhook" -> webhook(m);
        case "generate" -> GenerateReader.read(reading, models, m, i,
            GenerateReader.steps(names, this::fields), source);
        default -> custom(m);
      };
    }
    if (action instanceof StepAction.Infer infer && m.value("strategy") == null) {
      placement = StepPlacement.sameNodeAs(infer.input()); // where its input is cached: pinned, never hoped for
    }
    if (action != null && !(action instanceof StepAction.Custom) && m.has("params")) {
      problems.at(m.keyAt("params"), m.path("params"), "only class steps take params");
    }
    m.finish();
    placements.set(i, placement);
    actions.set(i, problems.count() > before ? null : action);
    if (problems.count() > before || action == null || placement == null || resources == null || retries == null
        || timeout == null) {
      return null;
    }
    try {
      return new StepSpec(name, action, resources, placement, retries, timeout.toMillis());
    } catch (IllegalArgumentException e) {
      problems.at(nodes.get(i), p, "invalid step: " + e.getMessage());
      return null;
    }
  }

  /** The fields of earlier step {@code k}'s result: empty if it had problems, null if any may be there. */
  private java.util.Set<String> fields(int k) {
    StepAction a = actions.get(k);
    if (a == null) {
      return java.util.Set.of();
    }
    return StepReferences.fields(a.kind(), a instanceof StepAction.Infer infer
        ? models.outputs(infer.deployment(), infer.graph()) : null);
  }

  private StepAction fetch(MappingReader m) {
    Node v = m.value("fetch");
    if (v instanceof ScalarNode) {
      String uri = template(problems, m, "fetch", null);
      return uri == null || !uriOk(m.at("fetch"), m.path("fetch"), uri) ? null
          : new StepAction.Fetch(uri, StepAction.DEFAULT_FETCH_MAX_BYTES);
    }
    MappingReader f = m.section("fetch");
    String uri = f.requiredText("uri");
    if (uri != null) {
      String problem = Templates.problem(uri);
      if (problem != null) {
        problems.at(f.at("uri"), f.path("uri"), problem);
        uri = null;
      } else if (!uriOk(f.at("uri"), f.path("uri"), uri)) {
        uri = null;
      }
    }
    Node mb = f.value("max_bytes");
    Long maxBytes = mb == null ? Long.valueOf(StepAction.DEFAULT_FETCH_MAX_BYTES)
        : reading.integer(mb, f.path("max_bytes"), 1, Long.MAX_VALUE);
    f.finish();
    return uri == null || maxBytes == null ? null : new StepAction.Fetch(uri, maxBytes);
  }

  /** A URI whose scheme is fixed in the file must be fetchable; one from a placeholder is checked per run. */
  private boolean uriOk(Node at, String path, String uri) {
    if (uri.startsWith("${")) {
      return true;
    }
    try {
      Sources.scheme(uri.replaceAll("\\$\\{[^}]*}", "x"));
      return true;
    } catch (IllegalArgumentException e) {
      problems.at(at, path, e.getMessage());
      return false;
    }
  }

  private StepAction infer(MappingReader m, int i, StepPlacement placement) {
    MappingReader f = m.section("infer");
    InferModels.Target target = models.read(f, problems);
    String input = f.text("input", null);
    if (input == null && f.value("input") == null) {
      input = defaultInput(i, placement);
      // A step before it of unknown kind is reported already; its kind may have been meant to be fetch.
      if (input == null && !kinds.subList(0, i).contains(null)) {
        problems.at(f.node(), f.path("input"), "an infer step reads a file an earlier fetch step cached: add a"
            + " fetch step before it, or name it with 'input'");
      }
    } else if (input != null && !isFetchBefore(input, i)) {
      problems.at(f.at("input"), f.path("input"), "input '" + input + "' must name an earlier fetch step"
          + stepsHint(input, i));
      input = null;
    }
    var format = format(f);
    String tensor = f.text("tensor", "");
    f.finish();
    if (input != null && placement != null && m.value("strategy") != null && !pinnedTo(placement, input, i)) {
      problems.at(m.at("strategy"), m.path("strategy"), "an infer step reads its input where '" + input
          + "' cached it: its strategy must be same_node_as: " + input + " (or omitted), got " + placement);
      return null;
    }
    return target == null || input == null || format == null || tensor == null ? null
        : new StepAction.Infer(target.name(), input, format, tensor, target.graph());
  }

  private InputFormat format(MappingReader f) {
    String v = f.text("format", InputFormat.RAW.spelling());
    if (v == null) {
      return null;
    }
    for (var fmt : InputFormat.values()) {
      if (fmt.spelling().equals(v)) {
        return fmt;
      }
    }
    List<String> names = Arrays.stream(InputFormat.values())
        .map(InputFormat::spelling).toList();
    problems.at(f.at("format"), f.path("format"), "unknown format '" + v + "'" + Suggestions.didYouMean(v, names)
        + "; expected one of: " + String.join(", ", names));
    return null;
  }

  /** The fetch step an unnamed input means: the anchor of its placement, else the nearest earlier fetch. */
  private String defaultInput(int i, StepPlacement placement) {
    if (placement != null && placement.kind() == StepPlacement.Kind.SAME_NODE_AS) {
      int a = anchor(names.indexOf(placement.target()));
      return a >= 0 && "fetch".equals(kinds.get(a)) ? names.get(a) : null;
    }
    for (int k = i - 1; k >= 0; k--) {
      if ("fetch".equals(kinds.get(k))) {
        return names.get(k);
      }
    }
    return null;
  }

  private boolean isFetchBefore(String step, int i) {
    int k = names.indexOf(step);
    return k >= 0 && k < i && "fetch".equals(kinds.get(k));
  }

  private boolean pinnedTo(StepPlacement placement, String step, int i) {
    if (placement.kind() != StepPlacement.Kind.SAME_NODE_AS) {
      return false;
    }
    int t = names.indexOf(placement.target());
    return t >= 0 && t < i && anchor(t) == names.indexOf(step);
  }

  /** Follows same_node_as chains of steps already read. */
  private int anchor(int k) {
    int at = k;
    for (int hops = 0; at >= 0 && hops <= nodes.size(); hops++) {
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

  private StepAction webhook(MappingReader m) {
    Node v = m.value("webhook");
    if (v instanceof ScalarNode) {
      String url = template(problems, m, "webhook", null);
      return url == null || !httpOk(m.at("webhook"), m.path("webhook"), url) ? null
          : new StepAction.Webhook(url, StepAction.DEFAULT_WEBHOOK_TIMEOUT_MS);
    }
    MappingReader f = m.section("webhook");
    String url = f.requiredText("url");
    if (url != null) {
      String problem = Templates.problem(url);
      if (problem != null) {
        problems.at(f.at("url"), f.path("url"), problem);
        url = null;
      } else if (!httpOk(f.at("url"), f.path("url"), url)) {
        url = null;
      }
    }
    Duration timeout = f.millis("timeout_ms", Duration.ofMillis(StepAction.DEFAULT_WEBHOOK_TIMEOUT_MS), true);
    f.finish();
    return url == null || timeout == null ? null : new StepAction.Webhook(url, timeout.toMillis());
  }

  private boolean httpOk(Node at, String path, String url) {
    if (url.startsWith("${") || url.startsWith("http://") || url.startsWith("https://")) {
      return true;
    }
    problems.at(at, path, "a webhook URL must start with http:// or https:// (or be a ${input.NAME} placeholder),"
        + " got '" + url + "'");
    return false;
  }

  private StepAction custom(MappingReader m) {
    String className = m.requiredText("class");
    if (className != null) {
      String problem = !CLASS_NAME.matcher(className).matches()
          ? "'" + className + "' is not a Java class name (e.g. com.example.Describe)" : classes.problem(className);
      if (problem != null) {
        problems.at(m.at("class"), m.path("class"), problem);
        className = null;
      }
    }
    Map<String, String> params = new java.util.TreeMap<>();
    MappingReader pm = m.section("params");
    boolean ok = pm.valid();
    if (pm.present()) {
      for (var t : pm.entries()) {
        String key = ((ScalarNode) t.getKeyNode()).getValue();
        String value = reading.text(t.getValueNode(), pm.path(key));
        String problem = value == null ? null : Templates.problem(value);
        if (problem != null) {
          problems.at(t.getValueNode(), pm.path(key), problem);
        }
        if (value == null || problem != null) {
          ok = false;
        } else {
          params.put(key, value);
        }
      }
    }
    return className == null || !ok ? null : new StepAction.Custom(className, params);
  }

  private StepPlacement placement(MappingReader m, int i) {
    Node v = m.value("strategy");
    if (v == null) {
      return StepPlacement.DEFAULT; // an infer step's default is decided by its input, later
    }
    String path = m.path("strategy");
    if (v instanceof ScalarNode s) {
      String text = reading.text(s, path);
      if (text == null) {
        return null;
      }
      switch (text) {
        case "spread" -> {
          return StepPlacement.SPREAD;
        }
        case "default" -> {
          return StepPlacement.DEFAULT;
        }
        default -> {
          problems.at(v, path, "unknown strategy '" + text + "'"
              + Suggestions.didYouMean(text, List.of("spread", "default"))
              + "; expected spread, default, {same_node_as: STEP} or {node_with_resource: KEY}");
          return null;
        }
      }
    }
    MappingReader s = reading.mapping(v, path);
    if (!s.valid()) {
      return null;
    }
    String same = s.text("same_node_as", null);
    String resource = s.text("node_with_resource", null);
    boolean both = s.has("same_node_as") && s.has("node_with_resource");
    boolean neither = !s.has("same_node_as") && !s.has("node_with_resource");
    s.finish();
    if (both || neither) {
      problems.at(v, path, both ? "a strategy is either same_node_as or node_with_resource, not both"
          : "a strategy mapping needs same_node_as: STEP or node_with_resource: KEY");
      return null;
    }
    if (same == null && resource == null) {
      return null; // not text: reported
    }
    if (same != null) {
      int t = names.indexOf(same);
      if (t == i) {
        problems.at(s.at("same_node_as"), s.path("same_node_as"), "a step cannot follow itself");
      } else if (t < 0) {
        problems.at(s.at("same_node_as"), s.path("same_node_as"), "no step named '" + same + "'"
            + stepsHint(same, i));
      } else if (t > i) {
        problems.at(s.at("same_node_as"), s.path("same_node_as"), "'" + same + "' is a later step (steps[" + t
            + "]); same_node_as names a step that ran before this one");
      } else {
        return StepPlacement.sameNodeAs(same);
      }
      return null;
    }
    if (!RESOURCE_KEY.matcher(resource).matches()) {
      problems.at(s.at("node_with_resource"), s.path("node_with_resource"), "'" + resource
          + "' is not a resource name (letters, digits, '_', '.', '-')");
      return null;
    }
    return StepPlacement.nodeWithResource(resource);
  }

  private String stepsHint(String given, int i) {
    List<String> earlier = names.subList(0, i).stream().filter(java.util.Objects::nonNull).toList();
    return Suggestions.didYouMean(given, earlier)
        + (earlier.isEmpty() ? "; it is the first step" : "; earlier steps: " + String.join(", ", earlier));
  }

  /** A text field that may hold placeholders; {@code dflt} if absent, null if wrong (reported). */
  static String template(Problems problems, MappingReader m, String key, String dflt) {
    String v = m.text(key, dflt);
    if (v != null && !v.equals(dflt)) {
      String problem = Templates.problem(v);
      if (problem != null) {
        problems.at(m.at(key), m.path(key), problem);
        return null;
      }
    }
    return v;
  }

  private Resources resources(MappingReader r) {
    if (!r.present()) {
      return r.valid() ? Resources.NONE : null;
    }
    Resources resources = Resources.NONE;
    boolean ok = true;
    for (var t : r.entries()) {
      String key = ((ScalarNode) t.getKeyNode()).getValue();
      String path = r.path(key);
      if (!RESOURCE_KEY.matcher(key).matches()) {
        problems.at(t.getKeyNode(), path, "'" + key + "' is not a resource name (letters, digits, '_', '.', '-')");
        ok = false;
        continue;
      }
      var amount = reading.decimal(t.getValueNode(), path, 0, 1_000_000);
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
}
