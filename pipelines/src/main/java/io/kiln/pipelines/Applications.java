package io.kiln.pipelines;

import io.kiln.pipelines.graphs.Graphs;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.GraphSpec;
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
 * deployments, model graphs and pipelines are validated together, and only a file without a single problem is
 * applied, deployments first (through the {@link ServeController}, so graph and infer steps never name a deployment
 * not yet stored), then graphs ({@link Graphs#apply}), then pipelines (into the cluster's pipeline store,
 * {@link Pipelines#apply}). A dry run validates and plans the same way and stores nothing.
 *
 * <p>What it guarantees:
 * <ol>
 *   <li>Every problem of the file, of its deployments, graphs and pipelines alike, is reported at once with file,
 *       line, column and schema path, in one {@link DeploymentValidationException}; then nothing is stored.</li>
 *   <li>Graph steps and infer steps may name a deployment (infer steps also a graph) of the same file or one already
 *       applied in the cluster.</li>
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
   * @param graphs the file's validated model graphs (empty when it declares none)
   * @param prunedGraphs with prune: the stored graphs absent from the file, deleted (or that would be)
   */
  public record Result(ApplyResult deployments, List<PipelineSpec> pipelines, boolean applied,
                       List<String> prunedDeployments, List<String> prunedPipelines, List<GraphSpec> graphs,
                       List<String> prunedGraphs) {

    public Result {
      Objects.requireNonNull(deployments, "deployments");
      pipelines = List.copyOf(pipelines);
      prunedDeployments = List.copyOf(prunedDeployments);
      prunedPipelines = List.copyOf(prunedPipelines);
      graphs = List.copyOf(graphs);
      prunedGraphs = List.copyOf(prunedGraphs);
    }

    /** A result without graphs. */
    public Result(ApplyResult deployments, List<PipelineSpec> pipelines, boolean applied,
                  List<String> prunedDeployments, List<String> prunedPipelines) {
      this(deployments, pipelines, applied, prunedDeployments, prunedPipelines, List.of(), List.of());
    }

    public Result(ApplyResult deployments, List<PipelineSpec> pipelines, boolean applied) {
      this(deployments, pipelines, applied, List.of(), List.of());
    }
  }

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final Pipelines pipelines;
  private final PipelineLoader loader;
  private final Graphs graphs; // null: the node's Graphs service, looked up when a file is applied

  /**
   * User step classes are checked against {@link Pipelines#stepClassLoader()} of this node; model graphs are stored
   * through the node's {@link Graphs} service (a node without one refuses a file that declares graphs).
   */
  public Applications(KilnRuntime runtime, ServeController serve, Pipelines pipelines) {
    this(runtime, serve, pipelines, new PipelineLoader(new PipelineLoader.Options(DeploymentLoader.Options.DEFAULT,
        true, pipelines.stepClassLoader())));
  }

  public Applications(KilnRuntime runtime, ServeController serve, Pipelines pipelines, PipelineLoader loader) {
    this(runtime, serve, pipelines, null, loader);
  }

  /** @param graphs where model graphs are stored; null for the node's {@link Graphs} service */
  public Applications(KilnRuntime runtime, ServeController serve, Pipelines pipelines, Graphs graphs,
                      PipelineLoader loader) {
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.serve = Objects.requireNonNull(serve, "serve");
    this.pipelines = Objects.requireNonNull(pipelines, "pipelines");
    this.graphs = graphs;
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
   * deployments; graphs between them). Internal pools, named {@code _…}, are never pruned, nor a deployment or graph
   * the file's infer steps name, nor a deployment a kept graph calls. A dry run only lists what it would delete.
   * An invalid file prunes nothing.
   */
  public CompletionStage<Result> apply(String yaml, Path source, boolean dryRun, boolean prune) {
    Graphs graphs = graphs();
    DeploymentLoader.Known known = new DeploymentLoader.Known(serve.desired().keySet(), serve::deployed,
        graphs == null ? Set.of() : graphs.names());
    return runtime.vertx().<PipelineFile>executeBlocking(() -> {
      PipelineFile file = loader.load(yaml, source, known);
      if (graphs == null && !file.graphs().isEmpty()) {
        throw new DeploymentValidationException(List.of(new io.kiln.serve.Problem(source.toString(), 1, 1,
            DeploymentLoader.GRAPHS, "node " + runtime.nodeId() + " serves no model graphs")));
      }
      return file;
    }, false).toCompletionStage()
        .thenCompose(file -> applyValid(file.deployments(), file.graphs(), file.pipelines(), dryRun))
        .thenCompose(result -> prune ? prune(result) : CompletableFuture.completedFuture(result));
  }

  /** This node's graphs: the one given, else its node-local service (a node that serves graphs registers one). */
  private Graphs graphs() {
    return graphs != null ? graphs : runtime.localService(Graphs.class).orElse(null);
  }

  private CompletionStage<Result> prune(Result applied) {
    Set<String> keepDeployments = new HashSet<>();
    applied.deployments().deployments().forEach(d -> keepDeployments.add(d.name()));
    Set<String> keepPipelines = new HashSet<>();
    applied.pipelines().forEach(p -> keepPipelines.add(p.name()));
    Graphs graphs = graphs();
    Set<String> keepGraphs = new HashSet<>();
    applied.graphs().forEach(g -> keepGraphs.add(g.name()));
    // A deployment or graph only in the cluster that the file's own pipelines infer (or generate) on is part of what
    // the file needs, and so are the deployments of the graphs kept.
    applied.pipelines().forEach(p -> p.steps().forEach(s -> {
      if (s.action() instanceof StepAction.Infer infer) {
        (infer.graph() ? keepGraphs : keepDeployments).add(infer.deployment());
      } else if (s.action() instanceof StepAction.Generate generate) {
        keepDeployments.add(generate.deployment());
      }
    }));
    keepGraphs.forEach(g -> (graphs == null ? java.util.Optional.<GraphSpec>empty() : graphs.graph(g))
        .ifPresent(spec -> keepDeployments.addAll(spec.deployments())));
    applied.graphs().forEach(g -> keepDeployments.addAll(g.deployments()));
    List<String> goneDeployments = serve.desired().keySet().stream()
        .filter(n -> !n.startsWith("_") && !keepDeployments.contains(n)).sorted().toList();
    List<String> goneGraphs = graphs == null ? List.of()
        : graphs.names().stream().filter(n -> !keepGraphs.contains(n)).sorted().toList();
    return pipelines.pipelines().thenCompose(stored -> {
      List<String> gonePipelines = stored.stream().map(PipelineSpec::name)
          .filter(n -> !keepPipelines.contains(n)).sorted().toList();
      Result result = new Result(applied.deployments(), applied.pipelines(), applied.applied(), goneDeployments,
          gonePipelines, applied.graphs(), goneGraphs);
      if (!applied.applied()) {
        return CompletableFuture.completedFuture(result);
      }
      CompletionStage<Void> chain = CompletableFuture.completedFuture(null);
      for (String p : gonePipelines) {
        chain = chain.thenCompose(v -> pipelines.delete(p)).thenApply(deleted -> null);
      }
      for (String g : goneGraphs) { // after the pipelines that may call them, before the deployments they call
        chain = chain.thenCompose(v -> graphs.delete(g)).thenApply(deleted -> null);
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
    }, false).toCompletionStage().thenCompose(v -> applyValid(d, List.of(), p, dryRun));
  }

  private CompletionStage<Result> applyValid(List<DeploymentSpec> deployments, List<GraphSpec> graphSpecs,
                                             List<PipelineSpec> specs, boolean dryRun) {
    return serve.apply(deployments, dryRun).thenCompose(result -> {
      Result done = new Result(result, specs, !dryRun, List.of(), List.of(), graphSpecs, List.of());
      if (dryRun) {
        return CompletableFuture.completedFuture(done);
      }
      // Graphs before the pipelines whose infer steps call them, after the deployments their steps call.
      CompletionStage<Void> stored = graphSpecs.isEmpty() ? CompletableFuture.completedFuture(null)
          : graphs().apply(graphSpecs);
      return stored.thenCompose(v -> specs.isEmpty() ? CompletableFuture.completedFuture(null) : pipelines.apply(specs))
          .thenApply(v -> done);
    });
  }
}
