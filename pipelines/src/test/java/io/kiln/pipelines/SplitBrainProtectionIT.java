package io.kiln.pipelines;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pipelines.impl.JobStore;
import io.kiln.pipelines.impl.RunStore;
import io.kiln.pipelines.jobs.JobLoader;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentLoader;
import io.kiln.testkit.FreePorts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Split-brain protection of pipeline runs, jobs and the cache index on real Hazelcast members (two in this JVM, a
 * minimum cluster size of 2): with both present a pipeline is applied and a run completes; once one member has gone,
 * the one left (as the smaller side of a partition sees itself) refuses to start a run, submit, resume or cancel a job
 * with {@link BelowMinimumClusterSizeException} naming the store and the sizes, records nothing, and every protected
 * store refuses a direct write. Runs with the multi-process tests (it starts Hazelcast).
 */
class SplitBrainProtectionIT {

  static final Duration JOIN = Duration.ofSeconds(120);
  static final List<String> PIPELINE_STORES = List.of(RunStore.PIPELINES, RunStore.RUNS, JobStore.SPECS,
      JobStore.STATUS, JobStore.CONTROL, CacheIndex.MAP);

  final String cluster = "sbp-" + UUID.randomUUID();
  final List<AutoCloseable> open = new ArrayList<>();
  @TempDir
  Path tmp;

  @AfterEach
  void stop() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  CompletableFuture<KilnRuntime> start(String nodeId, int port, List<String> members) {
    ClusterOptions o = new ClusterOptions(cluster, "127.0.0.1", port, members, Duration.ofSeconds(1),
        Duration.ofSeconds(4), null, ClusterDiscovery.STATIC, 2, 0);
    return KilnCluster.join(new NodeOptions(nodeId, "127.0.0.1", Resources.cpu(2), Map.of()), o).toCompletableFuture();
  }

  static <T> T result(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(JOIN.toSeconds(), TimeUnit.SECONDS);
  }

  @Test
  void belowTheMinimumRunsAndJobsAreRefusedNamingTheMinimumAndNothingIsRecorded() throws Exception {
    int[] ports = FreePorts.distinct(2);
    int port = ports[0];
    // Both at once: with a minimum of 2 neither completes its join alone.
    CompletableFuture<KilnRuntime> a = start("sbp-a", port, List.of("127.0.0.1:" + port));
    CompletableFuture<KilnRuntime> b = start("sbp-b", ports[1], List.of("127.0.0.1:" + port));
    KilnRuntime head = result(a);
    open.add(head);
    KilnRuntime other = result(b);
    open.add(other);
    await().atMost(JOIN).until(() -> head.members().size() == 2 && other.members().size() == 2);

    Pipelines pipelines = new Pipelines(head, PipelineOptions.defaults(tmp, "sbp-a"), name -> Optional.empty());
    result(pipelines.start());
    open.add(pipelines);
    PoolLoadBoard board = new PoolLoadBoard(head);
    result(board.ready());
    open.add(board::close);
    Jobs jobs = new Jobs(head, pipelines, name -> Optional.empty(), board, System::currentTimeMillis, 200);
    result(jobs.start());
    open.add(jobs);

    // With the minimum present: writes are accepted, a run completes.
    PipelineFile file = new PipelineLoader(PipelineLoader.Options.DEFAULT
        .withDeployments(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false))).load("""
        deployments:
          - name: ident
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs: [{name: input, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1}
        pipelines:
          - name: echo
            steps:
              - {name: once, class: io.kiln.pipelines.TestSteps$Echo}
          - name: held
            steps:
              - {name: hold, class: io.kiln.pipelines.TestSteps$Hold, params: {gate: sbp-held}}
        """, Path.of("test.yaml"), Set.of());
    result(pipelines.apply(file.pipelines()));
    String before = result(pipelines.startRun("echo", RunRequest.of(Map.of())));
    await().atMost(JOIN).until(() -> result(pipelines.run(before)).map(s -> s.state() == RunState.SUCCEEDED)
        .orElse(false));

    String held = result(pipelines.startRun("held", RunRequest.of(Map.of())));
    assertThat(pipelines.activeRuns()).isEqualTo(1);

    // One member gone: this node is below the minimum, as the smaller side of a partition is. It stops the run it
    // coordinates (it can record nothing of it; the larger side's leader would fail it).
    other.close();
    open.remove(other);
    await().atMost(JOIN).until(() -> head.members().size() == 1);
    await().atMost(JOIN).until(() -> pipelines.activeRuns() == 0);

    assertRefused(pipelines.startRun("echo", RunRequest.of(Map.of())), RunStore.RUNS);
    assertThat(pipelines.activeRuns()).as("no run coordinated").isZero();
    assertThat(result(pipelines.runs("echo"))).extracting(RunStatus::runId).as("no run recorded")
        .containsExactly(before);
    assertThat(result(pipelines.run(held))).map(RunStatus::state).as("its end could not be recorded")
        .contains(RunState.RUNNING);

    Files.createDirectories(tmp.resolve("in"));
    Files.write(tmp.resolve("in/clip.f32"), new byte[16]);
    JobSpec job = new JobLoader().load("name: clips\ndeployment: ident\ninputs: {folder: in}\noutput: out\n",
        tmp.resolve("job.yaml"));
    assertRefused(jobs.submit(job), JobStore.SPECS);
    assertRefused(jobs.resume("clips-1"), JobStore.STATUS);
    assertRefused(jobs.cancel("clips-1"), JobStore.CONTROL);
    assertThat(result(jobs.list())).as("no job recorded").isEmpty();
    assertThat(tmp.resolve("out")).as("no output folder prepared").doesNotExist();

    // The guard itself, under the checks above: Hazelcast refuses every protected store's writes.
    for (String store : PIPELINE_STORES) {
      assertRefused(head.store(store, String.class).put("k", "v"), store);
    }
    // Reads still answer.
    assertThat(result(pipelines.pipeline("echo"))).isPresent();

    // A member joins (as at a heal): the run this node ended while below the minimum is recorded as failed, saying why.
    KilnRuntime third = result(start("sbp-c", FreePorts.one(), List.of("127.0.0.1:" + port)));
    open.add(third);
    await().atMost(JOIN).until(() -> result(pipelines.run(held)).map(s -> s.state() == RunState.FAILED).orElse(false));
    assertThat(result(pipelines.run(held)).orElseThrow().error()).contains("smaller side of a partition");
    TestSteps.gate("sbp-held").countDown();
  }

  static void assertRefused(CompletionStage<?> stage, String store) {
    assertThat(stage.toCompletableFuture()).failsWithin(JOIN).withThrowableThat().havingCause()
        .isInstanceOfSatisfying(BelowMinimumClusterSizeException.class, e -> {
          assertThat(e.minimum()).isEqualTo(2);
          assertThat(e.members()).isEqualTo(1);
          assertThat(e).hasMessageContaining("write to " + store + " refused")
              .hasMessageContaining("minimum cluster size of 2");
        });
  }
}
