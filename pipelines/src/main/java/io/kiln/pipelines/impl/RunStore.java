package io.kiln.pipelines.impl;

import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SharedStore;
import io.kiln.runtime.WireCodec;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.RunStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * Pipelines and runs in the cluster's shared stores, as JSON: pipelines in {@value #PIPELINES} by name, run
 * statuses in {@value #RUNS} by run id (written by the run's coordinator; by the leader once the
 * coordinator is gone). An entry that does not read fails the read that meets it (with
 * {@link io.kiln.runtime.UnreadableEntryException} naming the store and key). Non-blocking; thread-safe.
 */
public final class RunStore {

  public static final String PIPELINES = "kiln.pipelines";
  public static final String RUNS = "kiln.pipeline-runs";

  private final SharedStore<PipelineSpec> pipelines;
  private final SharedStore<RunStatus> runs;

  public RunStore(KilnRuntime runtime) {
    this.pipelines = runtime.store(PIPELINES, PipelineSpec.class);
    this.runs = runtime.store(RUNS, RunStatus.class);
  }

  public CompletionStage<Void> putPipeline(PipelineSpec spec) {
    return pipelines.put(spec.name(), spec);
  }

  public CompletionStage<Optional<PipelineSpec>> pipeline(String name) {
    return pipelines.get(name).thenApply(o -> o.map(SharedStore.Entry::value));
  }

  public CompletionStage<List<PipelineSpec>> pipelines() {
    return pipelines.entries().thenApply(m -> m.values().stream()
        .map(SharedStore.Entry::value)
        .sorted(java.util.Comparator.comparing(PipelineSpec::name)).toList());
  }

  public CompletionStage<Boolean> removePipeline(String name) {
    return pipelines.get(name).thenCompose(o -> o.isEmpty()
        ? java.util.concurrent.CompletableFuture.completedFuture(false)
        : pipelines.remove(name, o.get()));
  }

  public CompletionStage<Void> put(RunStatus status) {
    return runs.put(status.runId(), status);
  }

  public CompletionStage<Optional<RunStatus>> get(String runId) {
    return runs.get(runId).thenApply(o -> o.map(SharedStore.Entry::value));
  }

  /** Entries with their versions, for compare-and-set updates by the leader. */
  public CompletionStage<Map<String, SharedStore.Entry<RunStatus>>> runEntries() {
    return runs.entries();
  }

  public CompletionStage<Boolean> replace(String runId, SharedStore.Entry<RunStatus> expected, RunStatus update) {
    return runs.replace(runId, expected, update);
  }

  public CompletionStage<Boolean> remove(String runId, SharedStore.Entry<RunStatus> expected) {
    return runs.remove(runId, expected);
  }

  public CompletionStage<List<RunStatus>> runs(String pipeline) {
    return runs.entries().thenApply(m -> {
      List<RunStatus> out = new ArrayList<>();
      for (SharedStore.Entry<RunStatus> e : m.values()) {
        RunStatus s = e.value();
        if (pipeline == null || s.pipeline().equals(pipeline)) {
          out.add(s);
        }
      }
      out.sort(java.util.Comparator.comparingLong(RunStatus::createdAtMs).reversed());
      return out;
    });
  }

  public static String encode(RunStatus s) {
    return WireCodec.toJson(s);
  }

  public static RunStatus decode(String json) {
    return WireCodec.fromJson(json, RunStatus.class);
  }
}
