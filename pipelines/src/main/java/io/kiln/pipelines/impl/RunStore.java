package io.kiln.pipelines.impl;

import io.kiln.runtime.impl.WireCodec;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.runtime.spi.cluster.SharedMap;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.RunStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * Pipelines and runs in the cluster's shared maps, as JSON: pipelines in {@value #PIPELINES} by name, run
 * statuses in {@value #RUNS} by run id (written by the run's coordinator; by the leader once the
 * coordinator is gone). Non-blocking; thread-safe.
 */
public final class RunStore {

  public static final String PIPELINES = "kiln.pipelines";
  public static final String RUNS = "kiln.pipeline-runs";

  private final SharedMap pipelines;
  private final SharedMap runs;

  public RunStore(ClusterBackend cluster) {
    this.pipelines = cluster.map(PIPELINES);
    this.runs = cluster.map(RUNS);
  }

  public CompletionStage<Void> putPipeline(PipelineSpec spec) {
    return pipelines.put(spec.name(), WireCodec.toJson(spec));
  }

  public CompletionStage<Optional<PipelineSpec>> pipeline(String name) {
    return pipelines.get(name).thenApply(o -> o.map(json -> WireCodec.fromJson(json, PipelineSpec.class)));
  }

  public CompletionStage<List<PipelineSpec>> pipelines() {
    return pipelines.entries().thenApply(m -> m.values().stream()
        .map(json -> WireCodec.fromJson(json, PipelineSpec.class))
        .sorted(java.util.Comparator.comparing(PipelineSpec::name)).toList());
  }

  public CompletionStage<Boolean> removePipeline(String name) {
    return pipelines.get(name).thenCompose(o -> o.isEmpty()
        ? java.util.concurrent.CompletableFuture.completedFuture(false)
        : pipelines.remove(name, o.get()));
  }

  public CompletionStage<Void> put(RunStatus status) {
    return runs.put(status.runId(), encode(status));
  }

  public CompletionStage<Optional<RunStatus>> get(String runId) {
    return runs.get(runId).thenApply(o -> o.map(RunStore::decode));
  }

  /** Raw entries, for compare-and-set updates by the leader. */
  public CompletionStage<Map<String, String>> rawRuns() {
    return runs.entries();
  }

  public CompletionStage<Boolean> replace(String runId, String expectedJson, RunStatus update) {
    return runs.replace(runId, expectedJson, encode(update));
  }

  public CompletionStage<Boolean> remove(String runId, String expectedJson) {
    return runs.remove(runId, expectedJson);
  }

  public CompletionStage<List<RunStatus>> runs(String pipeline) {
    return runs.entries().thenApply(m -> {
      List<RunStatus> out = new ArrayList<>();
      for (String json : m.values()) {
        RunStatus s = decode(json);
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
