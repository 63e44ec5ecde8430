package io.kiln.pipelines;

import static io.kiln.pipelines.JobCluster.HEAD;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobState;
import io.kiln.pipelines.jobs.JobStatus;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Jobs whose nodes take several inputs per task (per_node 8 and more: batches of a quarter of it), on real
 * in-process nodes, pools, caches and output folders: a node killed while it holds batches, a cancel while
 * batches are in flight followed by a resume, and a restart of the whole cluster lose no result, duplicate none
 * (one whole, correct result per input, checked by content) and redo only what had no result.
 */
@Tag("slow")
class JobBatchesTest {

  @TempDir
  Path tmp;

  static void checkComplete(Path out, List<String> uris) throws Exception {
    Map<String, JsonNode> results = JobCluster.results(out);
    assertThat(JobCluster.strays(out)).as("leftover files").isEmpty();
    assertThat(results.keySet()).as("one result per input")
        .containsExactlyInAnyOrderElementsOf(uris.stream().map(NodeCache::keyOf).toList());
    for (JsonNode r : results.values()) {
      String uri = r.path("uri").asText();
      assertThat(r.path("infer_node").asText()).as("analysed on its fetch node: " + uri)
          .isEqualTo(r.path("fetch_node").asText());
      String clip = uri.substring(uri.lastIndexOf('/') + 1).replace(".f32", "");
      assertThat(JobCluster.outputData(r)).as("output of " + clip).containsExactly(JobCluster.expected(clip));
    }
  }

  List<String> mediaUrls(JobCluster c, int n) {
    List<String> urls = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      urls.add(c.mediaUrl(i)); // served after 200 ms each: a batch of 4 downloads for 800 ms
    }
    return urls;
  }

  @Test
  void killingANodeThatHoldsBatchesLosesNoResultAndDuplicatesNone() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1", "w2")) {
      List<String> urls = mediaUrls(c, 72);
      String id = result(c.jobs(HEAD).submit(c.load(JobsClusterTest.urlJob("crash", urls, "out",
          "per_node: 16\nmax_in_flight: 48"))));
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id))
          .map(s -> s.resultsByNode().getOrDefault("w2", 0L) >= 4 && s.inFlight() >= 8).orElse(false));
      JobStatus atKill = result(c.jobs(HEAD).status(id)).orElseThrow();
      long killedAt = System.nanoTime();
      c.crash("w2");
      JobStatus s = c.awaitEnd(HEAD, id);
      long endedMs = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
      assertThat(s.state()).as(s.toString()).isEqualTo(JobState.SUCCEEDED);
      assertThat(s.done()).isEqualTo(urls.size());
      assertThat(s.failed()).isZero();
      checkComplete(tmp.resolve("out"), urls);
      System.out.printf("[jobs] node loss mid-batch: failures by cause %s; results by node %s%n",
          s.failuresByCause(), s.resultsByNode());
      JobLossFigures.write(tmp.resolve("out"), urls, atKill, s, endedMs);
    }
  }

  @Test
  void aJobCancelledMidBatchThenResumedRedoesOnlyWhatHadNoResult() throws Exception {
    try (JobCluster c = new JobCluster(tmp, HEAD, "w1")) {
      List<String> urls = mediaUrls(c, 80);
      JobSpec spec = c.load(JobsClusterTest.urlJob("again", urls, "out", "per_node: 8\nmax_in_flight: 16"));
      String id = result(c.jobs(HEAD).submit(spec));
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id))
          .map(s -> s.done() >= 4 && s.inFlight() >= 4).orElse(false));
      assertThat(result(c.jobs("w1").cancel(id))).isTrue();
      assertThat(c.awaitEnd(HEAD, id).state()).isEqualTo(JobState.CANCELLED);
      // The batches in flight finish and their results land; nothing more is dispatched.
      await().atMost(PipelineCluster.WAIT).until(() -> result(c.jobs(HEAD).status(id)).map(x -> x.inFlight() == 0)
          .orElse(false));
      int kept = JobCluster.results(tmp.resolve("out")).size();
      assertThat(kept).isLessThan(urls.size());
      assertThat(c.modelCalls(HEAD, "w1")).as("every analysed input has its result").isEqualTo(kept);
      assertThat(result(c.jobs(HEAD).status(id)).orElseThrow().done()).isEqualTo(kept);

      String resumed = result(c.jobs(HEAD).resume(id));
      JobStatus s = c.awaitEnd(HEAD, resumed);
      assertThat(s.state()).as(s.toString()).isEqualTo(JobState.SUCCEEDED);
      assertThat(s.skipped()).isEqualTo(kept);
      assertThat(c.modelCalls(HEAD, "w1")).as("the resumed job analysed only the rest").isEqualTo(urls.size());
      checkComplete(tmp.resolve("out"), urls);
    }
  }

  @Test
  void afterAWholeClusterRestartTheSameJobRedoesOnlyWhatHadNoResult() throws Exception {
    int n = 3000;
    JobCluster first = new JobCluster(tmp, HEAD, "w1");
    Path media = first.mediaFolder("media", n);
    String yaml = JobsClusterTest.folderJob("restart", "media", "out", "per_node: 8\nmax_in_flight: 16");
    try {
      String id = result(first.jobs(HEAD).submit(first.load(yaml)));
      await().atMost(PipelineCluster.WAIT).until(() -> result(first.jobs(HEAD).status(id)).map(s -> s.done() >= 100)
          .orElse(false));
    } finally {
      first.close(); // every node at once, with batches in flight
    }
    try (JobCluster second = new JobCluster(tmp, HEAD, "w1")) {
      String id = result(second.jobs(HEAD).submit(second.load(yaml)));
      JobStatus s = second.awaitEnd(HEAD, id);
      assertThat(s.state()).as(s.toString()).isEqualTo(JobState.SUCCEEDED);
      assertThat(s.skipped()).as("results written before the restart are kept").isGreaterThanOrEqualTo(100);
      assertThat(second.modelCalls(HEAD, "w1")).as("only inputs without a result are analysed again")
          .isEqualTo(n - s.skipped());
      List<String> uris = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        uris.add(media.resolve("clip-" + i + ".f32").toAbsolutePath().toUri().toString());
      }
      checkComplete(tmp.resolve("out"), uris);
    }
  }
}
