package io.kiln.pipelines.impl;

import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * Reads what a step does: the section of its kind, reporting every problem with its position. Fetch, webhook and
 * class sections are read here; infer and generate sections, which are checked against the models and the other
 * steps, by {@link InferReader} and {@link GenerateReader}. Text settings may hold {@code ${input.NAME}}
 * placeholders, filled per run, so a URI or URL is checked here only as far as the file fixes it. Not thread-safe:
 * one instance per pipeline, as its {@link StepTable}.
 */
final class ActionReader {

  private static final Pattern CLASS_NAME = Pattern.compile("([A-Za-z_$][A-Za-z0-9_$]*\\.)*[A-Za-z_$][A-Za-z0-9_$]*");

  private final Reading reading;
  private final Problems problems;
  private final InferModels models;
  private final StepClasses classes;
  private final StepTable steps;
  private final InferReader infer;
  private final String source;

  /** @param source the YAML text the nodes come from, or null */
  ActionReader(Reading reading, InferModels models, StepClasses classes, StepTable steps, String source) {
    this.reading = reading;
    this.problems = reading.problems();
    this.models = models;
    this.classes = classes;
    this.steps = steps;
    this.infer = new InferReader(problems, models, steps);
    this.source = source;
  }

  /**
   * Step {@code i}'s action, or null after reporting why not.
   *
   * @param kind the step's one kind, of {@link StepTable#KINDS}
   * @param placement the step's placement as its strategy reads, or null if that was wrong (reported)
   */
  StepAction read(String kind, MappingReader m, int i, StepPlacement placement) {
    return switch (kind) {
      case "fetch" -> fetch(m);
      case "infer" -> infer.read(m, i, placement);
      case "webhook" -> webhook(m);
      case "generate" -> GenerateReader.read(reading, models, m, i, steps, source);
      default -> custom(m);
    };
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

  private StepAction fetch(MappingReader m) {
    if (m.value("fetch") instanceof ScalarNode) {
      String uri = address(m, "fetch", this::uriOk);
      return uri == null ? null : new StepAction.Fetch(uri, StepAction.DEFAULT_FETCH_MAX_BYTES);
    }
    MappingReader f = m.section("fetch");
    String uri = address(f, "uri", this::uriOk);
    Node mb = f.value("max_bytes");
    Long maxBytes = mb == null ? Long.valueOf(StepAction.DEFAULT_FETCH_MAX_BYTES)
        : reading.integer(mb, f.path("max_bytes"), 1, Long.MAX_VALUE);
    f.finish();
    return uri == null || maxBytes == null ? null : new StepAction.Fetch(uri, maxBytes);
  }

  /** Checks an address, reporting why it does not fit. */
  private interface AddressCheck {
    boolean fits(Node at, String path, String address);
  }

  /**
   * A required address that may hold placeholders, checked by {@code check}: a section's field, or the step's own
   * field in its one-line form; null if absent or wrong (reported).
   */
  private String address(MappingReader section, String key, AddressCheck check) {
    String v = section.requiredText(key);
    if (v == null) {
      return null;
    }
    String problem = Templates.problem(v);
    if (problem != null) {
      problems.at(section.at(key), section.path(key), problem);
      return null;
    }
    return check.fits(section.at(key), section.path(key), v) ? v : null;
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

  private StepAction webhook(MappingReader m) {
    if (m.value("webhook") instanceof ScalarNode) {
      String url = address(m, "webhook", this::httpOk);
      return url == null ? null : new StepAction.Webhook(url, StepAction.DEFAULT_WEBHOOK_TIMEOUT_MS);
    }
    MappingReader f = m.section("webhook");
    String url = address(f, "url", this::httpOk);
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
    Map<String, String> params = new TreeMap<>();
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
}
