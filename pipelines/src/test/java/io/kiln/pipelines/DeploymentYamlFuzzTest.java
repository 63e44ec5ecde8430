package io.kiln.pipelines;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.testkit.RunStamp;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A seeded fuzzer over the deployment-file loaders ({@link DeploymentLoader}, and {@link PipelineLoader} for
 * files that declare pipelines): the repository's example files and a full spec, truncated, bit-flipped,
 * spliced, given huge numbers, deep nesting, wrong types, YAML tags, anchors and alias bombs. Every input
 * either loads or is refused with a {@link DeploymentValidationException} listing problems; nothing else
 * escapes, and the bytes allocated stay within a small multiple of the input (an alias bomb does not expand).
 *
 * <p>CI runs {@value #CI_ITERATIONS} inputs; {@code -Dkiln.reliability.fuzz.yaml.iterations=N} (else {@code fuzz.iterations}) and
 * {@code -Dkiln.reliability.fuzz.seed=S} run more or replay one ({@code reliability/run.sh fuzz}).
 */
@Tag("slow")
class DeploymentYamlFuzzTest {

  static final int CI_ITERATIONS = 1500;
  static final long ITERATIONS = Long.getLong("kiln.reliability.fuzz.yaml.iterations",
      Long.getLong("kiln.reliability.fuzz.iterations", CI_ITERATIONS));
  static final long SEED = Long.getLong("kiln.reliability.fuzz.seed", 20261130L);
  static final long BYTES_PER_INPUT_BYTE = 200;
  static final long FIXED_ALLOWANCE = 4L << 20;

  static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  static final String FULL = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 64]}]
            warmup: {batch_sizes: [1, 8]}
          pool:
            workers_per_node: 2
            worker_resources: {CPU: 1}
            node_selector: {zone: a}
            max_restarts: 3
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
          queue: {max_queued: 512, timeout_ms: 30000}
          autoscaling: {min_workers: 1, max_workers: 4, target_ongoing_per_worker: 2}
          health: {}
      """;

  /** serve's {@code Specs.MINIMAL} (a test class of serve, so copied): a minimal valid deployment. */
  static final String MINIMAL = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
          pool:
            workers_per_node: 2
      """;

  static final List<String> TOKENS = List.of("&a ", "*a", "<<: *a\n", "!!java.net.URL ", "!!binary ", "!!str ",
      "!!int ", "!!python/object ", "? ", "- ", ": ", "\t", "\n", "{", "}", "[", "]", ",", "'", "\"", "|\n", ">-\n",
      "%YAML 1.1\n", "---\n", "...\n", "#", "~", "null", "0x7fffffffffffffff", "1e400", "-.inf", ".nan",
      "99999999999999999999999", "-1", "\u00e9", "\u0000", "\uFEFF", "deployments:", "pipelines:");

  final DeploymentLoader deployments = new DeploymentLoader(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false));
  final PipelineLoader pipelines = new PipelineLoader(PipelineLoader.Options.DEFAULT
      .withDeployments(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false)));

  static List<String> seeds() throws IOException {
    List<String> seeds = new ArrayList<>(List.of(FULL, MINIMAL));
    Path examples = repositoryRoot().resolve("deploy/examples");
    try (var files = Files.walk(examples)) {
      for (Path p : files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
        seeds.add(Files.readString(p));
      }
    }
    return seeds;
  }

  static Path repositoryRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("deploy/examples"))) {
        return p;
      }
    }
    throw new IllegalStateException("no deploy/examples above " + Path.of("").toAbsolutePath());
  }

  /** What one file did: loaded, refused with problems, or escaped the loader (described, to replay). */
  enum Outcome { LOADED, REFUSED, ESCAPED }

  /** Loads {@code yaml}; a refusal without problems, or anything thrown but a refusal, is ESCAPED. */
  Outcome load(String yaml, long iteration, List<String> problems) {
    try {
      if (PipelineLoader.declaresPipelines(yaml)) {
        pipelines.load(yaml, Path.of("fuzz.yaml"), Set.of());
      } else {
        deployments.load(yaml, Path.of("fuzz.yaml"));
      }
      return Outcome.LOADED;
    } catch (DeploymentValidationException e) {
      if (e.problems().isEmpty()) {
        note(problems, describe(iteration, yaml) + " was refused without problems");
        return Outcome.ESCAPED;
      }
      return Outcome.REFUSED;
    } catch (Throwable t) {
      note(problems, describe(iteration, yaml) + " escaped the loader with " + t);
      return Outcome.ESCAPED;
    }
  }

  private static void note(List<String> problems, String what) {
    if (problems.size() < 10) {
      problems.add(what);
    }
  }

  static String describe(long iteration, String yaml) {
    byte[] b = yaml.getBytes(StandardCharsets.UTF_8);
    return "input #" + iteration + " (seed " + SEED + ", " + b.length + " bytes, base64 "
        + Base64.getEncoder().encodeToString(b.length > 2048 ? Arrays.copyOf(b, 2048) : b) + ")";
  }

  @Test
  void mutatedDeploymentFilesAreLoadedOrRefusedWithProblemsNeverAnythingElse() throws IOException {
    List<String> seeds = seeds();
    SplittableRandom random = new SplittableRandom(SEED);
    List<String> problems = new ArrayList<>();
    for (String s : seeds) {
      load(s, -1, problems); // warm the paths (class loading counts as allocation)
    }
    long loaded = 0;
    long refused = 0;
    long escaped = 0;
    long overAllocated = 0;
    long maxAllocated = 0;
    for (long i = 0; i < ITERATIONS; i++) {
      String yaml = mutate(random, seeds.get(random.nextInt(seeds.size())), seeds.get(random.nextInt(seeds.size())));
      long before = THREADS.getCurrentThreadAllocatedBytes();
      Outcome o = load(yaml, i, problems);
      long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
      long bound = BYTES_PER_INPUT_BYTE * yaml.length() + FIXED_ALLOWANCE;
      if (o != Outcome.ESCAPED && allocated > bound) {
        before = THREADS.getCurrentThreadAllocatedBytes();
        load(yaml, i, new ArrayList<>()); // again, without the first visit's class loading
        allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
      }
      maxAllocated = Math.max(maxAllocated, allocated);
      if (o == Outcome.ESCAPED) {
        escaped++;
      } else if (allocated > bound) {
        overAllocated++;
        note(problems, describe(i, yaml) + " allocated " + allocated + " bytes (bound " + bound + ")");
      } else if (o == Outcome.LOADED) {
        loaded++;
      } else {
        refused++;
      }
    }
    String json = "{\"scenario\":\"fuzz-yaml-loader\",\"seed\":" + SEED + ",\"inputs\":" + ITERATIONS + ",\"loaded\":"
        + loaded + ",\"refusedWithProblems\":" + refused + ",\"escaped\":" + escaped + ",\"overAllocated\":"
        + overAllocated + ",\"maxAllocatedBytes\":" + maxAllocated + "," + RunStamp.jsonMembers() + "}";
    Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    Files.createDirectories(out);
    Files.writeString(out.resolve("fuzz-yaml-loader.json"), json);
    System.out.println("RELIABILITY fuzz-yaml-loader " + json);
    assertThat(loaded + refused + escaped + overAllocated).isEqualTo(ITERATIONS);
    assertThat(escaped).as("files that escaped the loaders: %s", problems).isZero();
    assertThat(overAllocated).as("files that allocated beyond their bound: %s", problems).isZero();
    assertThat(loaded).as("some mutants still load, so the accepting paths run too").isPositive();
    assertThat(refused).isPositive();
  }

  @Test
  void anAliasBombIsRefusedWithoutExpanding() {
    StringBuilder yaml = new StringBuilder("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 12; i++) {
      yaml.append("a").append(i).append(": &a").append(i).append(" [");
      for (int j = 0; j < 10; j++) {
        yaml.append(j == 0 ? "" : ", ").append("*a").append(i - 1);
      }
      yaml.append("]\n");
    }
    yaml.append("deployments: *a11\n");
    long before = THREADS.getCurrentThreadAllocatedBytes();
    List<String> problems = new ArrayList<>();
    assertThat(load(yaml.toString(), 0, problems)).as("%s", problems).isEqualTo(Outcome.REFUSED);
    assertThat(THREADS.getCurrentThreadAllocatedBytes() - before).as("bytes allocated").isLessThan(64L << 20);
  }

  static String mutate(SplittableRandom r, String seed, String other) {
    String s = seed;
    for (int n = 1 + r.nextInt(3); n > 0; n--) {
      if (s.isEmpty()) {
        s = TOKENS.get(r.nextInt(TOKENS.size()));
        continue;
      }
      int at = r.nextInt(s.length());
      s = switch (r.nextInt(9)) {
        case 0 -> s.substring(0, at);
        case 1 -> { // flip characters
          char[] c = s.toCharArray();
          for (int k = 1 + r.nextInt(4); k > 0; k--) {
            int i = r.nextInt(c.length);
            c[i] = (char) (c[i] ^ (1 << r.nextInt(7)));
          }
          yield new String(c);
        }
        case 2 -> s.substring(0, at) + TOKENS.get(r.nextInt(TOKENS.size())) + s.substring(at);
        case 3 -> s.replaceFirst("\\d+", TOKENS.get(r.nextInt(TOKENS.size())).trim().isEmpty() ? "0"
            : List.of("-1", "0", "2147483648", "99999999999999999999", "1e400", "0.5", "-0", ".inf").get(r.nextInt(8)));
        case 4 -> s.substring(0, at) + (r.nextBoolean() ? "[" : "{a: ").repeat(1 + r.nextInt(3000)) + s.substring(at);
        case 5 -> s.substring(0, at) + other.substring(Math.min(at, other.length()));
        case 6 -> { // a value of the wrong type after a random colon
          int colon = s.indexOf(':', at);
          if (colon < 0) {
            yield s;
          }
          int eol = s.indexOf('\n', colon);
          String value = List.of(" [1, 2]", " {a: b}", " ~", " \"x\"", " 12", " true", " !!binary AAAA", " *nope",
              " &anchor [x]", " ''").get(r.nextInt(10));
          yield s.substring(0, colon + 1) + value + (eol < 0 ? "" : s.substring(eol));
        }
        case 7 -> { // a line duplicated (duplicate keys)
          int start = s.lastIndexOf('\n', at) + 1;
          int end = s.indexOf('\n', at);
          String line = s.substring(start, end < 0 ? s.length() : end + 1);
          yield s.substring(0, start) + line + line + s.substring(end < 0 ? s.length() : end + 1);
        }
        default -> s.substring(0, at) + s.substring(Math.min(s.length(), at + 1 + r.nextInt(20)));
      };
    }
    return s;
  }
}
