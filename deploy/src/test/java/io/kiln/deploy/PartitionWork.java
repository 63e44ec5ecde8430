package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.core.ConditionTimeoutException;

/**
 * The pipeline runs and batch jobs of {@link PartitionIT}: a two-step pipeline ({@code fetch} a file, {@code infer} it
 * through the identity deployment) and a job over {@value #INPUTS} small files, started on each side of the cut. The
 * minority must refuse both (503, {@code Retry-After}, the store and the minimum cluster size named, nothing
 * recorded); the majority accepts both, and after the heal every node lists exactly the runs and the one job the
 * majority started, each finished with every result present once and right.
 */
final class PartitionWork {

  static final int INPUTS = 6;
  static final String PIPELINE = "twice";
  /** The pipeline, declared with the deployment (its {@code analyse} step infers what {@code fetch} read, raw FP32). */
  static final String PIPELINES = """
      pipelines:
        - name: twice
          steps:
            - {name: fetch, fetch: "${input.uri}"}
            - {name: analyse, infer: {deployment: echo, input: fetch, format: raw}}
      """;

  private final MultiHostCluster hosts;
  private final String token;
  private final Path in;
  private final Path out;
  final List<String> runs = new ArrayList<>();
  final List<String> jobs = new ArrayList<>();
  final Map<String, Object> figures = new LinkedHashMap<>();

  PartitionWork(MultiHostCluster hosts, String token) throws IOException {
    this.hosts = hosts;
    this.token = token;
    this.in = Files.createDirectories(hosts.home().resolve("partition-in"));
    this.out = hosts.home().resolve("partition-out");
    for (int i = 0; i < INPUTS; i++) {
      Files.write(clip(i), raw(i));
    }
  }

  private Path clip(int i) {
    return in.resolve("clip-" + i + ".f32");
  }

  /** One row of the deployment's input, FP32 [1, 2], little-endian: {@code [i + 0.5, -i]}. */
  static byte[] raw(int i) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putFloat(i + 0.5f).putFloat(-i).array();
  }

  String runBody(int i) {
    return "{\"input\": {\"uri\": \"" + clip(i).toUri() + "\"}}";
  }

  String jobFile() {
    return "name: clips\ndeployment: echo\nformat: raw\ninputs: {folder: " + in + "}\noutput: " + out + "\n";
  }

  /** On the majority: a run and the job, accepted. */
  void startOnTheMajority(NetnsClient.Remote client, String node) throws Exception {
    for (int i = 0; i < 2; i++) {
      NetnsClient.Remote.Answer a = client.http("POST", hosts.url(node, "/api/v1/pipelines/" + PIPELINE + "/runs"),
          token, runBody(i));
      assertThat(a.status()).as("a run on the majority (%s): %s", node, a.body()).isEqualTo(202);
      runs.add(a.json().path("run_id").asText());
    }
    NetnsClient.Remote.Answer j = client.http("POST", hosts.url(node, "/api/v1/jobs"), token, jobFile());
    assertThat(j.status()).as("a job on the majority (%s): %s", node, j.body()).isEqualTo(202);
    jobs.add(j.json().path("job_id").asText());
  }

  /** On the minority: a run and a job, each refused clearly; nothing recorded there. */
  void refusedOnTheMinority(NetnsClient.Remote inside, String node, SoftAssertions soft) throws Exception {
    long askedAt = System.nanoTime();
    NetnsClient.Remote.Answer run = inside.http("POST", hosts.url(node, "/api/v1/pipelines/" + PIPELINE + "/runs"),
        token, runBody(0));
    NetnsClient.Remote.Answer job = inside.http("POST", hosts.url(node, "/api/v1/jobs"), token, jobFile());
    figures.put("minorityRun", Map.of("status", run.status(), "body", run.body(),
        "retryAfter", String.valueOf(run.retryAfter())));
    figures.put("minorityJob", Map.of("status", job.status(), "body", job.body(),
        "retryAfter", String.valueOf(job.retryAfter())));
    figures.put("minorityRefusalsMs", PartitionIT.msSince(askedAt));
    soft.assertThat(run.status()).as("a pipeline run on the minority: %s", run.body()).isEqualTo(503);
    soft.assertThat(run.body()).contains("kiln.pipeline-runs").contains("minimum cluster size of 2");
    soft.assertThat(run.retryAfter()).as("Retry-After of the run's refusal").isNotNull();
    soft.assertThat(job.status()).as("a job on the minority: %s", job.body()).isEqualTo(503);
    soft.assertThat(job.body()).contains("kiln.job-specs").contains("minimum cluster size of 2");
    soft.assertThat(job.retryAfter()).as("Retry-After of the job's refusal").isNotNull();
  }

  /**
   * After the heal: as every node sees it, the pipeline's runs are exactly the majority's, each SUCCEEDED with its
   * input inferred back; the jobs are exactly the majority's one, SUCCEEDED with every input done once; the output
   * folder holds one right result per input and nothing else.
   */
  void completeOnceAfterTheHeal(NetnsClient.Remote client, List<String> nodes, String coordinator, Duration atMost)
      throws Exception {
    long from = System.nanoTime();
    AtomicReference<String> last = new AtomicReference<>();
    try {
      await("runs and the job finished, as every node sees them").atMost(atMost).pollInterval(Duration.ofMillis(500))
          .until(() -> {
            last.set(problem(client, nodes));
            return last.get() == null;
          });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("not within " + atMost + ": " + last.get() + hosts.logTails(), e);
    }
    figures.put("workFinishedAfterTheHealMs", PartitionIT.msSince(from));
    JsonNode job = client.http("GET", hosts.url(coordinator, "/api/v1/jobs/" + jobs.get(0)), token, null).json();
    figures.put("job", Map.of("total", job.path("total").asInt(), "done", job.path("done").asInt(),
        "skipped", job.path("skipped").asInt(), "failed", job.path("failed").asInt(),
        "resultsByNode", job.path("resultsByNode")));
    assertThat(job.path("done").asInt()).as("job inputs done: %s", job).isEqualTo(INPUTS);
    assertThat(job.path("failed").asInt()).as("job inputs failed: %s", job).isZero();
    Map<String, JsonNode> results = new TreeMap<>();
    List<String> others = new ArrayList<>();
    try (Stream<Path> s = Files.list(out)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        String name = p.getFileName().toString();
        if (name.endsWith(".json") && !name.startsWith("_")) { // <sha256 of the URI>.json
          results.put(name, ClosedLoopLoad.JSON.readTree(p.toFile()));
        } else if (!name.equals("_job.json") && !name.equals("_failed")) {
          others.add(name);
        }
      }
    }
    figures.put("jobResultFiles", results.size());
    assertThat(results).as("one result file per input").hasSize(INPUTS);
    assertThat(others).as("nothing else in the output folder (no temp file left)").isEmpty();
    List<String> seen = new ArrayList<>();
    for (JsonNode r : results.values()) {
      JsonNode data = r.path("outputs").path(0).path("data");
      seen.add(data.path(0).asDouble() + "," + data.path(1).asDouble());
    }
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < INPUTS; i++) {
      expected.add((i + 0.5) + "," + (double) -i);
    }
    assertThat(seen).as("each input's result, right, once").containsExactlyInAnyOrderElementsOf(expected);
  }

  /** What is not yet as {@link #completeOnceAfterTheHeal} wants it, on some node; null when all is. */
  private String problem(NetnsClient.Remote client, List<String> nodes) throws Exception {
    for (String n : nodes) {
      NetnsClient.Remote.Answer listed = client.http("GET", hosts.url(n, "/api/v1/pipelines/" + PIPELINE + "/runs"),
          token, null);
      if (listed.status() != 200) {
        return n + ": runs " + listed.status() + " " + listed.body();
      }
      List<String> ids = new ArrayList<>();
      for (JsonNode r : listed.json().path("runs")) {
        ids.add(r.path("runId").asText());
        if (!r.path("state").asText().equals("SUCCEEDED")) {
          return n + ": run " + r;
        }
      }
      if (!sorted(ids).equals(sorted(runs))) {
        return n + " lists runs " + ids + ", not exactly the majority's " + runs;
      }
      NetnsClient.Remote.Answer js = client.http("GET", hosts.url(n, "/api/v1/jobs"), token, null);
      if (js.status() != 200) {
        return n + ": jobs " + js.status() + " " + js.body();
      }
      List<String> jobIds = new ArrayList<>();
      for (JsonNode j : js.json().path("jobs")) {
        jobIds.add(j.path("id").asText());
        if (!j.path("state").asText().equals("SUCCEEDED")) {
          return n + ": job " + j;
        }
      }
      if (!jobIds.equals(jobs)) {
        return n + " lists jobs " + jobIds + ", not exactly the majority's " + jobs;
      }
    }
    for (String id : runs) {
      JsonNode run = client.http("GET", hosts.url(nodes.get(0), "/api/v1/pipelines/" + PIPELINE + "/runs/" + id),
          token, null).json();
      JsonNode data = null;
      for (JsonNode st : run.path("steps")) {
        if (st.path("name").asText().equals("analyse")) {
          data = st.path("output").path("outputs").path(0).path("data");
        }
      }
      int i = runs.indexOf(id);
      if (data == null || data.path(0).asDouble() != i + 0.5 || data.path(1).asDouble() != -i) {
        return "run " + id + " (of clip-" + i + "): inference " + data + " in " + run;
      }
    }
    return null;
  }

  static List<String> sorted(List<String> l) {
    return l.stream().sorted().toList();
  }
}
