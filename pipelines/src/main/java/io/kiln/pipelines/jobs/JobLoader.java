package io.kiln.pipelines.jobs;

import io.kiln.pipelines.InputFormat;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.YamlDocuments;
import java.io.BufferedReader;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Stream;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads a job file, reporting every problem with file, line, column and field path (as deployment files
 * are read), and building the {@link JobSpec} only when there is none:
 *
 * <pre>
 * name: clips
 * deployment: mlp              # or  pipeline: media  (+ input_field: media_uri)
 * format: raw                  # raw | oip_json; tensor: NAME for a model with several inputs
 * inputs:                      # exactly one of:
 *   folder: inputs/            #   every regular file in it (not recursive), sorted
 *   # uris: [file:///data/a.f32, https://host/b.f32]
 *   # manifest: uris.txt       #   one URI per line; blank lines and # comments ignored
 * output: out/clips            # results, one file per input (relative paths: to the job file's folder)
 * max_in_flight: 64            # per job, cluster-wide
 * per_node: 8                  # per node
 * priority: low                # low (default: online requests first) | normal
 * retries: 2
 * max_bytes: 104857600
 * timeout_ms: 60000            # per attempt of one input
 * </pre>
 *
 * Relative paths (folder, manifest, output) resolve against the job file's folder. Immutable and
 * thread-safe; {@link #load} blocks (it lists folders and reads manifests): call it off event loops.
 */
public final class JobLoader {

  /** Largest job file, and largest manifest. */
  public static final long MAX_FILE_BYTES = 1L << 20;
  public static final long MAX_MANIFEST_BYTES = 256L << 20;

  /**
   * Reads {@code file}.
   *
   * @throws DeploymentValidationException listing every problem
   */
  public JobSpec load(Path file) {
    String text;
    try (java.io.InputStream in = Files.newInputStream(file)) {
      byte[] bytes = in.readNBytes((int) MAX_FILE_BYTES + 1);
      text = new String(bytes, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new DeploymentValidationException(List.of(new Problem(file.toString(), 1, 1, "",
          "cannot read the file: " + e.getMessage())));
    }
    return load(text, file);
  }

  /**
   * Parses {@code yamlText} as if read from {@code sourceName}.
   *
   * @throws DeploymentValidationException listing every problem
   */
  public JobSpec load(String yamlText, Path sourceName) {
    Problems problems = new Problems(sourceName.toString());
    if (yamlText.getBytes(StandardCharsets.UTF_8).length > MAX_FILE_BYTES) {
      problems.at(1, 1, "", "the job file is larger than " + MAX_FILE_BYTES + " bytes");
      problems.throwIfAny();
    }
    Path base = sourceName.toAbsolutePath().getParent();
    JobSpec spec = null;
    try {
      Node root = YamlDocuments.compose(yamlText.startsWith("\uFEFF") ? yamlText.substring(1) : yamlText,
          (int) MAX_FILE_BYTES + 1, problems);
      if (root == null) {
        problems.at(1, 1, "", "the job file is empty; it needs name, deployment (or pipeline), inputs and output");
      } else {
        spec = read(new Reading(problems), root, base);
      }
    } catch (Problems.Abort stop) {
      // reported
    }
    problems.throwIfAny();
    return spec;
  }

  private JobSpec read(Reading reading, Node root, Path base) {
    Problems problems = reading.problems();
    int before = problems.count();
    MappingReader m = reading.mapping(root, "");
    if (!m.valid()) {
      return null;
    }
    String name = m.requiredText("name");
    if (name != null && JobSpec.nameProblem(name) != null) {
      problems.at(m.at("name"), "name", JobSpec.nameProblem(name));
    }
    String deployment = m.text("deployment", "");
    String pipeline = m.text("pipeline", "");
    if (deployment.isEmpty() == pipeline.isEmpty()) {
      problems.at(deployment.isEmpty() ? m.node() : m.at("pipeline"), deployment.isEmpty() ? "deployment" : "pipeline",
          deployment.isEmpty()
          ? "name the deployment (or the pipeline) every input goes through"
          : "a job runs either a deployment or a pipeline, not both");
    }
    String inputField = m.text("input_field", JobSpec.DEFAULT_INPUT_FIELD);
    if (!deployment.isEmpty() && m.has("input_field")) {
      problems.at(m.at("input_field"), "input_field", "input_field is for pipeline jobs");
    }
    InputFormat format = InputFormat.RAW;
    String formatText = m.text("format", "raw");
    format = null;
    for (InputFormat f : InputFormat.values()) {
      if (f.spelling().equals(formatText)) {
        format = f;
      }
    }
    if (format == null) {
      problems.at(m.at("format"), "format", "format must be raw or oip_json, got '" + formatText + "'");
    }
    String tensor = m.text("tensor", "");
    List<String> inputs = inputs(reading, m, base);
    String outputText = m.requiredText("output");
    String output = null;
    if (outputText != null) {
      Path out = base.resolve(outputText).normalize();
      if (Files.exists(out) && !Files.isDirectory(out)) {
        problems.at(m.at("output"), "output", out + " exists and is not a folder");
      } else {
        output = out.toString();
      }
    }
    Integer maxInFlight = m.integer("max_in_flight", JobSpec.DEFAULT_MAX_IN_FLIGHT, 1, JobSpec.MAX_IN_FLIGHT);
    Integer perNode = m.integer("per_node", JobSpec.DEFAULT_PER_NODE, 1, JobSpec.MAX_PER_NODE);
    JobSpec.Priority priority = JobSpec.Priority.LOW;
    try {
      priority = JobSpec.Priority.parse(m.text("priority", "low"));
    } catch (IllegalArgumentException e) {
      problems.at(m.at("priority"), "priority", e.getMessage());
    }
    Integer retries = m.integer("retries", JobSpec.DEFAULT_RETRIES, 0, JobSpec.MAX_RETRIES);
    var maxBytes = m.decimal("max_bytes", java.math.BigDecimal.valueOf(JobSpec.DEFAULT_MAX_BYTES), 1, Long.MAX_VALUE);
    var timeout = m.millis("timeout_ms", java.time.Duration.ofMillis(JobSpec.DEFAULT_TIMEOUT_MS), true);
    m.finish();
    if (problems.count() > before) {
      return null;
    }
    try {
      return new JobSpec(name, deployment, pipeline, inputField, format, tensor, inputs, output, maxInFlight, perNode,
          priority, retries, maxBytes.longValue(), timeout.toMillis());
    } catch (IllegalArgumentException e) {
      problems.at(root, "", "invalid job: " + e.getMessage());
      return null;
    }
  }

  /** The dataset's URIs, distinct, in order; null (reported) when the section is wrong. */
  private static List<String> inputs(Reading reading, MappingReader job, Path base) {
    Problems problems = reading.problems();
    if (!job.has("inputs")) {
      job.required("inputs");
      return null;
    }
    MappingReader in = job.section("inputs");
    if (!in.valid()) {
      return null;
    }
    String folder = in.text("folder", null);
    List<Node> uriNodes = in.list("uris", false);
    String manifest = in.text("manifest", null);
    in.finish();
    int given = (folder != null ? 1 : 0) + (in.has("uris") ? 1 : 0) + (manifest != null ? 1 : 0);
    if (given != 1) {
      problems.at(job.at("inputs"), "inputs", given == 0 ? "give the dataset as folder, uris or manifest"
          : "give the dataset as exactly one of folder, uris and manifest");
      return null;
    }
    Set<String> uris = new LinkedHashSet<>();
    if (folder != null) {
      Path dir = base.resolve(folder).normalize();
      if (!Files.isDirectory(dir)) {
        problems.at(in.at("folder"), "inputs.folder", "no such folder: " + dir);
        return null;
      }
      try (Stream<Path> files = Files.list(dir)) {
        files.filter(Files::isRegularFile).sorted().limit(JobSpec.MAX_INPUTS + 1L)
            .forEach(p -> uris.add(p.toAbsolutePath().toUri().toString()));
      } catch (IOException e) {
        problems.at(in.at("folder"), "inputs.folder", "cannot list " + dir + ": " + e.getMessage());
        return null;
      }
      if (uris.isEmpty()) {
        problems.at(in.at("folder"), "inputs.folder", dir + " holds no files");
      }
    } else if (uriNodes != null) {
      for (int i = 0; i < uriNodes.size(); i++) {
        String u = reading.text(uriNodes.get(i), "inputs.uris[" + i + "]");
        if (u != null) {
          String problem = uriProblem(u);
          if (problem != null) {
            problems.at(uriNodes.get(i), "inputs.uris[" + i + "]", problem);
          } else {
            uris.add(u);
          }
        }
      }
      if (uriNodes.isEmpty()) {
        problems.at(in.at("uris"), "inputs.uris", "list at least one URI");
      }
    } else if (manifest != null) {
      Path file = base.resolve(manifest).normalize();
      try {
        if (Files.size(file) > MAX_MANIFEST_BYTES) {
          problems.at(in.at("manifest"), "inputs.manifest", file + " is larger than " + MAX_MANIFEST_BYTES + " bytes");
          return null;
        }
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
          String line;
          int n = 0;
          while ((line = r.readLine()) != null && uris.size() <= JobSpec.MAX_INPUTS) {
            n++;
            String u = line.strip();
            if (u.isEmpty() || u.startsWith("#")) {
              continue;
            }
            String problem = uriProblem(u);
            if (problem != null) {
              // The manifest's own position: the job file points at it, the message at the line.
              problems.at(in.at("manifest"), "inputs.manifest", file.getFileName() + " line " + n + ": " + problem);
            } else {
              uris.add(u);
            }
          }
        }
      } catch (IOException e) {
        problems.at(in.at("manifest"), "inputs.manifest", "cannot read " + file + ": " + e.getMessage());
        return null;
      }
      if (uris.isEmpty() && problems.isEmpty()) {
        problems.at(in.at("manifest"), "inputs.manifest", file + " lists no URIs");
      }
    }
    if (uris.size() > JobSpec.MAX_INPUTS) {
      problems.at(job.at("inputs"), "inputs", "more than " + JobSpec.MAX_INPUTS + " inputs; split the job");
      return null;
    }
    return new ArrayList<>(uris);
  }

  /** Why {@code uri} cannot be a job input, or null. */
  static String uriProblem(String uri) {
    if (uri.length() > JobSpec.MAX_URI_CHARS) {
      return "URI longer than " + JobSpec.MAX_URI_CHARS + " characters";
    }
    try {
      URI u = new URI(uri);
      String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
      if (!scheme.equals("file") && !scheme.equals("http") && !scheme.equals("https")) {
        return "'" + uri + "' is not a file://, http:// or https:// URI";
      }
      return null;
    } catch (java.net.URISyntaxException e) {
      return "'" + uri + "' is not a URI: " + e.getReason();
    }
  }
}
