package io.kiln.pipelines;

import static io.kiln.pipelines.JobCluster.HEAD;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobState;
import io.kiln.pipelines.jobs.JobStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch jobs on three nodes in one JVM with real pools ({@code builtin:identity}, one worker per node), real
 * node caches and the cluster index: every input is fetched and analysed on one node (checked in each
 * result), a node killed mid-job loses and duplicates nothing (checked by the output folder's content), a
 * re-run does only what is missing (checked by the pools' completed counts), cancel stops a job.
 */
@Tag("slow")
class JobsClusterTest {

  @TempDir
  Path tmp;

  static String folderJob(String name, String folder, String output, String extra) {
    return """
        name: %s
        deployment: ident
        inputs: {folder: %s}
        output: %s
        %s
        """.formatted(name, folder, output, extra);
  }

  static String urlJob(String name, List<String> urls, String output, String extra) {
    StringBuilder b = new StringBuilder("name: " + name + "\ndeployment: ident\noutput: " + output + "\n" + extra
        + "\ninputs:\n  uris:\n");
    urls.forEach(u -> b.append("    - ").append(u).append('\n'));
    return b.toString();
  }

  /** Checks a finished output folder: one whole, correct result per clip, each analysed where it was fetched. */
  static Map<String, JsonNode> checkOutputs(Path out, int clips) throws Exception {
    Map<String, JsonNode> results = JobCluster.results(out);
    assertThat(JobCluster.strays(out)).as("leftover files").isEmpty();
    assertThat(results).hasSize(clips);
    Set<String> uris = new HashSet<>();
    for (var e : results.entrySet()) {
      JsonNode r = e.getValue();
      String uri = r.path("uri").asText();
      assertThat(uris.add(uri)).as("one result per input").isTrue();
      assertThat(NodeCache.keyOf(uri)).isEqualTo(e.getKey());
      assertThat(r.path("infer_node").asText()).as("analysed on its fetch node: " + uri)
          .isEqualTo(r.path("fetch_node").asText());
      String clip = uri.substring(uri.lastIndexOf('/') + 1).replace(".f32", "");
      assertThat(JobCluster.outputData(r)).as("output of " + clip).containsExactly(JobCluster.expected(clip));
    }
    return results;
  }

  @Test
  void aJobOverThreeNodesAnalysesEveryInputOnTheNodeThatFetchedIt() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1", "w2")) {
      Path media = c.mediaFolder("media", 30);
      // Three inputs already sit in w2's cache: they must go to w2.
      List<String> cachedOnW2 = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        String uri = media.resolve("clip-" + i + ".f32").toAbsolutePath().toUri().toString();
        c.pc.pipelines("w2").cache().fetch(uri, 1 << 20);
        cachedOnW2.add(uri);
      }
      await().atMost(PipelineCluster.WAIT).until(() -> cachedOnW2.stream()
          .allMatch(u -> c.pc.pipelines(HEAD).cacheIndex().nodesFor(NodeCache.keyOf(u)).contains("w2")));
      JobSpec spec = c.load(folderJob("clips", "media", "out", "per_node: 3\nmax_in_flight: 6"));
      String id = result(c.jobs(HEAD).submit(spec));
      JobStatus s = c.awaitEnd("w1", id);
      assertThat(s.state()).as(s.toString()).isEqualTo(JobState.SUCCEEDED);
      assertThat(s.done()).isEqualTo(30);
      assertThat(s.failed()).isZero();
      Map<String, JsonNode> results = checkOutputs(tmp.resolve("out"), 30);
      for (String uri : cachedOnW2) {
        JsonNode r = results.get(NodeCache.keyOf(uri));
        assertThat(r.path("fetch_node").asText()).as("cached input " + uri).isEqualTo("w2");
        assertThat(r.path("cached").asBoolean()).isTrue();
      }
      assertThat(s.resultsByNode().keySet()).as("work spread over the nodes").hasSizeGreaterThanOrEqualTo(2);
      assertThat(s.resultsByNode().values().stream().mapToLong(Long::longValue).sum())
          .as("every result counted by its node, the last batch's too: " + s.resultsByNode()).isEqualTo(30);
      assertThat(c.modelCalls(HEAD, "w1", "w2")).isEqualTo(30);
    }
  }

  @Test
  void aPipelineJobRunsThePipelineOncePerInput() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1", "w2")) {
      c.pc.apply("""
          pipelines:
            - name: media
              steps:
                - name: fetch
                  fetch: {uri: "${input.media_uri}", max_bytes: 1048576}
                  resources: {fetch_slot: 1}
                  strategy: spread
                - name: analyse
                  infer: {deployment: ident}
          """);
      c.mediaFolder("media", 9);
      String yaml = folderJob("viapipe", "media", "out", "pipeline: media\ninput_field: media_uri")
          .replace("deployment: ident\n", "");
      String id = result(c.jobs(HEAD).submit(c.load(yaml)));
      JobStatus s = c.awaitEnd(HEAD, id);
      assertThat(s.state()).as(s.toString()).isEqualTo(JobState.SUCCEEDED);
      Map<String, JsonNode> results = JobCluster.results(tmp.resolve("out"));
      assertThat(results).hasSize(9);
      for (JsonNode r : results.values()) {
        JsonNode steps = r.path("steps");
        assertThat(steps.get(1).path("node").asText()).as("analysed where fetched")
            .isEqualTo(steps.get(0).path("node").asText());
        assertThat(r.path("run_id").asText()).isNotEmpty();
      }
    }
  }

  @Test
  void killingANodeMidJobLosesNoResultAndDuplicatesNone() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1", "w2")) {
      int n = 60;
      List<String> urls = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        urls.add(c.mediaUrl(i)); // served after 200 ms each: the job is mid-flight for seconds
      }
      JobSpec spec = c.load(urlJob("crash", urls, "out", "per_node: 4\nmax_in_flight: 12"));
      String id = result(c.jobs(HEAD).submit(spec));
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id))
          .map(s -> s.resultsByNode().getOrDefault("w2", 0L) >= 2 && s.inFlight() > 0).orElse(false));
      c.crash("w2");
      JobStatus s = c.awaitEnd(HEAD, id);
      assertThat(s.state()).as(s.toString()).isEqualTo(JobState.SUCCEEDED);
      assertThat(s.done()).isEqualTo(n);
      Map<String, JsonNode> results = JobCluster.results(tmp.resolve("out"));
      assertThat(JobCluster.strays(tmp.resolve("out"))).isEmpty();
      assertThat(results).hasSize(n);
      Set<String> seen = new HashSet<>();
      for (JsonNode r : results.values()) {
        assertThat(seen.add(r.path("uri").asText())).isTrue();
        assertThat(r.path("infer_node").asText()).isEqualTo(r.path("fetch_node").asText());
        String uri = r.path("uri").asText();
        assertThat(JobCluster.outputData(r)).containsExactly(JobCluster.expected(uri.substring(uri.lastIndexOf('/') + 1)));
      }
      assertThat(urls.stream().map(NodeCache::keyOf).toList()).containsExactlyInAnyOrderElementsOf(results.keySet());
      System.out.printf("[jobs] node loss: %s; failures by cause %s; results by node %s%n", s.state(),
          s.failuresByCause(), s.resultsByNode());
    }
  }

  @Test
  void whenTheCoordinatorDiesTheLeaderResumesTheJob() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1", "w2")) {
      int n = 40;
      List<String> urls = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        urls.add(c.mediaUrl(i));
      }
      String id = result(c.jobs("w1").submit(c.load(urlJob("orphan", urls, "out", "per_node: 2\nmax_in_flight: 4"))));
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id)).map(s -> s.done() >= 4)
          .orElse(false));
      c.crash("w1");
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id))
          .map(s -> s.coordinator().equals(HEAD) && s.state() == JobState.SUCCEEDED).orElse(false));
      JobStatus s = result(c.jobs(HEAD).status(id)).orElseThrow();
      assertThat(s.skipped()).as("results the first coordinator wrote are kept").isGreaterThanOrEqualTo(4);
      Map<String, JsonNode> results = JobCluster.results(tmp.resolve("out"));
      assertThat(results.keySet()).containsExactlyInAnyOrderElementsOf(urls.stream().map(NodeCache::keyOf).toList());
      assertThat(JobCluster.strays(tmp.resolve("out"))).isEmpty();
    }
  }

  @Test
  void aResumedJobRedoesOnlyWhatWasMissing() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1", "w2")) {
      c.mediaFolder("media", 20);
      JobSpec spec = c.load(folderJob("again", "media", "out", ""));
      String first = result(c.jobs(HEAD).submit(spec));
      assertThat(c.awaitEnd(HEAD, first).state()).isEqualTo(JobState.SUCCEEDED);
      long callsBefore = c.modelCalls(HEAD, "w1", "w2");
      assertThat(callsBefore).isEqualTo(20);
      // Five results go missing (as if the job had been interrupted before them); one is left half-written.
      List<Path> files;
      try (var l = Files.list(tmp.resolve("out"))) {
        files = l.filter(p -> NodeCache.isKey(p.getFileName().toString().replace(".json", ""))).sorted().toList();
      }
      for (Path p : files.subList(0, 5)) {
        Files.delete(p);
      }
      Files.writeString(tmp.resolve("out").resolve(".tmp-" + files.get(0).getFileName() + "-x"), "{\"half");
      // Resumed under its id on another node...
      String resumed = result(c.jobs("w1").resume(first));
      JobStatus s = c.awaitEnd(HEAD, resumed);
      assertThat(s.state()).isEqualTo(JobState.SUCCEEDED);
      assertThat(s.skipped()).isEqualTo(15);
      assertThat(s.done()).isEqualTo(20);
      assertThat(c.modelCalls(HEAD, "w1", "w2") - callsBefore).as("model calls of the resumed job").isEqualTo(5);
      checkOutputs(tmp.resolve("out"), 20);
      // ...and the same file submitted again finds everything done: no model call at all.
      String third = result(c.jobs("w2").submit(spec));
      JobStatus again = c.awaitEnd(HEAD, third);
      assertThat(again.state()).isEqualTo(JobState.SUCCEEDED);
      assertThat(again.skipped()).isEqualTo(20);
      assertThat(c.modelCalls(HEAD, "w1", "w2") - callsBefore).isEqualTo(5);
    }
  }

  @Test
  void cancelStopsDispatchingAndKeepsWhatFinished() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1")) {
      List<String> urls = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        urls.add(c.mediaUrl(i));
      }
      JobSpec spec = c.load(urlJob("stop", urls, "out", "max_in_flight: 2\nper_node: 1"));
      String id = result(c.jobs(HEAD).submit(spec));
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id)).map(s -> s.done() >= 2)
          .orElse(false));
      assertThat(result(c.jobs("w1").cancel(id))).isTrue(); // from another node than the coordinator
      JobStatus s = c.awaitEnd(HEAD, id);
      assertThat(s.state()).isEqualTo(JobState.CANCELLED);
      // What was in flight may still land; nothing more is dispatched.
      await().atMost(PipelineCluster.WAIT).pollDelay(Duration.ofMillis(500)).until(() ->
          result(c.jobs(HEAD).status(id)).map(x -> x.inFlight() == 0).orElse(false));
      int files = JobCluster.results(tmp.resolve("out")).size();
      assertThat(files).isLessThan(20);
      assertThat(c.modelCalls(HEAD, "w1")).isEqualTo(files);
      assertThat(result(c.jobs(HEAD).cancel("no-such-job"))).isFalse();
    }
  }
}
