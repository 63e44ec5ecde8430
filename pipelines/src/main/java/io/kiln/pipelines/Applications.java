package io.kiln.pipelines;

import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.ServeController;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The one way a deployment file is applied ({@code kiln deploy}, {@code POST /api/v1/deployments}): its
 * deployments and its pipelines are validated together, and only a file without a single problem is applied,
 * deployments first (through the {@link ServeController}, so infer steps never name a deployment not yet
 * stored), then pipelines (into the cluster's pipeline store, {@link Pipelines#apply}). A dry run validates
 * and plans the same way and stores nothing.
 *
 * <p>What it guarantees:
 * <ol>
 *   <li>Every problem of the file, of its deployments and its pipelines alike, is reported at once with file,
 *       line, column and schema path, in one {@link DeploymentValidationException}; then nothing is stored.</li>
 *   <li>Infer steps may name a deployment of the same file or one already desired in the cluster.</li>
 *   <li>A failure to store (the cluster's maps, not the input) fails the stage; deployments stored before it
 *       stay stored, as the controller stores each deployment on its own.</li>
 * </ol>
 *
 * <p>Threading: thread-safe and non-blocking; YAML is parsed and user step classes are checked on a Vert.x
 * worker thread. Futures complete on Vert.x or cluster threads.
 */
public final class Applications {

  /**
   * What applying a file did.
   *
   * @param deployments the controller's answer: the validated deployments and the plan on the current cluster
   * @param pipelines the file's validated pipelines (empty when it declares none)
   * @param applied false for a dry run, which stored nothing
   * @param prunedDeployments with prune: the stored deployments absent from the file, deleted (a dry run: that
   *     would be deleted); internal pools ({@code _…}) never are
   * @param prunedPipelines with prune: the stored pipelines absent from the file, deleted (or that would be)
   */
  public record Result(ApplyResult deployments, List<PipelineSpec> pipelines, boolean applied,
                       List<String> prunedDeployments, List<String> prunedPipelines) {

    public Result {
      Objects.requireNonNull(deployments, "deployments");
      pipelines = List.copyOf(pipelines);
      prunedDeployments = List.copyOf(prunedDeployments);
      prunedPipelines = List.copyOf(prunedPipelines);
    }

    public Result(ApplyResult deployments, List<PipelineSpec> pipelines, boolean applied) {
      this(deployments, pipelines, applied, List.of(), List.of());
    }
  }

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final Pipelines pipelines;
  private final PipelineLoader loader;

  /** User step classes are checked against {@link Pipelines#stepClassLoader()} of this node. */
  public Applications(KilnRuntime runtime, ServeController serve, Pipelines pipelines) {
    this(runtime, serve, pipelines, new PipelineLoader(new PipelineLoader.Options(DeploymentLoader.Options.DEFAULT,
        true, pipelines.stepClassLoader())));
  }

  public Applications(KilnRuntime runtime, ServeController serve, Pipelines pipelines, PipelineLoader loader) {
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.serve = Objects.requireNonNull(serve, "serve");
    this.pipelines = Objects.requireNonNull(pipelines, "pipelines");
    this.loader = Objects.requireNonNull(loader, "loader");
  }

  /**
   * Parses {@code yaml} once, validates its deployments and pipelines together, and unless {@code dryRun}
   * applies both.
   *
   * @param source the file the YAML came from: problems name it, relative model paths resolve against its folder
   * @return fails with {@link DeploymentValidationException} for invalid input
   */
  public CompletionStage<Result> apply(String yaml, Path source, boolean dryRun) {
    return apply(yaml, source, dryRun, false);
  }

  /**
   * As {@link #apply(String, Path, boolean)}; with {@code prune} the file is the whole truth: once it is stored,
   * the stored pipelines and deployments it does not declare are deleted (pipelines first, as they name
   * deployments). Internal pools, named {@code _…}, are never pruned, nor a deployment the file's infer steps name. A dry run only lists what it would delete.
   * An invalid file prunes nothing.
   */
  public CompletionStage<Result> apply(String yaml, Path source, boolean dryRun, boolean prune) {
    Set<String> known = serve.desired().keySet();
    return runtime.vertx().<PipelineFile>executeBlocking(() -> loader.load(yaml, source, known, serve::deployed), false)
        .toCompletionStage()
        .thenCompose(file -> applyValid(file.deployments(), file.pipelines(), dryRun))
        .thenCompose(result -> prune ? prune(result) : CompletableFuture.completedFuture(result));
  }

  private CompletionStage<Result> prune(Result applied) {
    Set<String> keepDeployments = new HashSet<>();
    applied.deployments().deployments().forEach(d -> keepDeployments.add(d.name()));
    Set<String> keepPipelines = new HashSet<>();
    applied.pipelines().forEach(p -> keepPipelines.add(p.name()));
    // A deployment only in the cluster that the file's own pipelines infer on is part of what the file needs.
    applied.pipelines().forEach(p -> p.steps().forEach(s -> {
      if (s.action() instanceof StepAction.Infer infer) {
        keepDeployments.add(infer.deployment());
      }
    }));
    List<String> goneDeployments = serve.desired().keySet().stream()
        .filter(n -> !n.startsWith("_") && !keepDeployments.contains(n)).sorted().toList();
    return pipelines.pipelines().thenCompose(stored -> {
      List<String> gonePipelines = stored.stream().map(PipelineSpec::name)
          .filter(n -> !keepPipelines.contains(n)).sorted().toList();
      Result result = new Result(applied.deployments(), applied.pipelines(), applied.applied(), goneDeployments,
          gonePipelines);
      if (!applied.applied()) {
        return CompletableFuture.completedFuture(result);
      }
      CompletionStage<Void> chain = CompletableFuture.completedFuture(null);
      for (String p : gonePipelines) {
        chain = chain.thenCompose(v -> pipelines.delete(p)).thenApply(deleted -> null);
      }
      for (String d : goneDeployments) {
        chain = chain.thenCompose(v -> serve.delete(d)).thenApply(deleted -> null);
      }
      return chain.thenApply(v -> result);
    });
  }

  /**
   * Applies specs built in code: checked as {@link PipelineLoader#check} checks them (problems at line 1,
   * column 1 of {@code "specs"}, with their paths), then applied as a file's are.
   *
   * @return fails with {@link DeploymentValidationException} for invalid input
   */
  public CompletionStage<Result> apply(List<DeploymentSpec> deployments, List<PipelineSpec> pipelineSpecs,
                                       boolean dryRun) {
    List<DeploymentSpec> d = List.copyOf(deployments);
    List<PipelineSpec> p = List.copyOf(pipelineSpecs);
    Set<String> known = serve.desired().keySet();
    return runtime.vertx().<Void>executeBlocking(() -> {
      loader.check(Path.of("specs"), d, p, known);
      return null;
    }, false).toCompletionStage().thenCompose(v -> applyValid(d, p, dryRun));
  }

  private CompletionStage<Result> applyValid(List<DeploymentSpec> deployments, List<PipelineSpec> specs,
                                             boolean dryRun) {
    return serve.apply(deployments, dryRun).thenCompose(result -> {
      if (dryRun || specs.isEmpty()) {
        return CompletableFuture.completedFuture(new Result(result, specs, !dryRun));
      }
      return pipelines.apply(specs).thenApply(v -> new Result(result, specs, true));
    });
  }
}
