package io.kiln.pipelines.graphs;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pipelines.Applications;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.PipelineOptions;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.StepAction;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.GraphSpec;
import io.kiln.serve.ServeController;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Graphs through the one apply operation on a one-node in-process cluster (real controller, pipelines and graphs):
 * stored after their deployments and before the pipelines that call them, or not at all; names shared with a
 * deployment refused either way; pruned with the file. The deployments select no node (what is stored matters here,
 * not what is served), so a graph request finds no pool and says which step lacks one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class GraphApplyTest {

  static final Path SOURCE = Path.of("app.yaml");

  @TempDir
  static Path tmp;

  LocalCluster cluster;
  KilnRuntime runtime;
  PoolLoadBoard board;
  ServeController serve;
  Pipelines pipelines;
  Graphs graphs;
  Applications applications;

  /** A deployment {@code d}, a graph {@code g} calling it twice, and a pipeline {@code p} whose infer step calls g. */
  static String file(String d, String g, String p) {
    return """
        deployments:
          - name: %1$s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 1}, node_selector: {zone: nowhere}}
        graphs:
          - name: %2$s
            inputs: [{name: v, datatype: FP32, shape: [-1, 4]}]
            steps:
              - {name: one, model: %1$s, input_map: {input: input.v}}
              - {name: two, model: %1$s, input_map: {input: one.output}}
            outputs: [{name: out, datatype: FP32, shape: [-1, 4], from: two.output}]
        pipelines:
          - name: %3$s
            steps:
              - name: fetch
                fetch: "${input.media_uri}"
              - name: analyse
                infer: {graph: %2$s}
        """.formatted(d, g, p);
  }

  @BeforeAll
  void start() {
    cluster = LocalCluster.create();
    runtime = result(cluster.startNode(new NodeOptions("a", "127.0.0.1", Resources.cpu(4), Map.of())));
    board = new PoolLoadBoard(runtime);
    PoolClient client = new PoolClient(runtime);
    serve = new ServeController(runtime, client, board);
    pipelines = new Pipelines(runtime, PipelineOptions.defaults(tmp, "a"), DeploymentResolver.of(serve), client);
    graphs = new Graphs(runtime, serve::servingVersion, board, client);
    result(board.ready());
    result(serve.start());
    result(graphs.start());
    result(pipelines.start());
    applications = new Applications(runtime, serve, pipelines); // finds the node's graphs as its service
  }

  @AfterAll
  void stop() {
    pipelines.close();
    graphs.close();
    serve.close();
    board.close();
    cluster.close();
  }

  @Test
  void aFileStoresItsGraphsBetweenItsDeploymentsAndItsPipelines() {
    Applications.Result dry = result(applications.apply(file("d1", "g1", "p1"), SOURCE, true));
    assertThat(dry.graphs()).extracting(GraphSpec::name).containsExactly("g1");
    assertThat(graphs.graph("g1")).as("a dry run stores nothing").isEmpty();

    Applications.Result r = result(applications.apply(file("d1", "g1", "p1"), SOURCE, false));
    assertThat(r.graphs()).extracting(GraphSpec::name).containsExactly("g1");
    assertThat(graphs.graph("g1")).hasValueSatisfying(g -> assertThat(g.deployments()).containsExactly("d1"));
    assertThat(result(pipelines.pipeline("p1")).orElseThrow().steps().get(1).action())
        .isEqualTo(new StepAction.Infer("g1", "fetch", io.kiln.pipelines.InputFormat.RAW, "", true));
    assertThat(graphs.target("g1")).hasValueSatisfying(t -> assertThat(t.inputs().get(0).name()).isEqualTo("v"));

    // Served as a model once a node runs a pool of every step; until then a request says which step lacks one.
    assertThat(graphs.ready("g1")).isFalse();
    Throwable t = failure(graphs.infer(RequestContext.within("r", 5_000), "g1", "a", new InferenceRequest("r",
        List.of(Tensor.ofFloats("v", new long[] {1, 4}, new float[4])), List.of(), Map.of())));
    assertThat(t).isInstanceOfSatisfying(InferenceException.class, e -> {
      assertThat(e.kind()).isIn(InferenceException.Kind.UNAVAILABLE);
      assertThat(e.getMessage()).contains("graph 'g1'").contains("'d1'");
    });
    assertThat(graphs.notReadyReason("g1")).contains("graph 'g1'").contains("d1");
  }

  @Test
  void aGraphAndADeploymentNeverShareAName() {
    result(applications.apply(file("d2", "g2", "p2"), SOURCE, false));
    Throwable graphLikeDeployment = failure(applications.apply(file("d3", "d2", "p3"), SOURCE, false));
    assertThat(graphLikeDeployment).isInstanceOfSatisfying(DeploymentValidationException.class, e ->
        assertThat(e.problems()).extracting(p -> p.path() + ": " + p.message())
            .anySatisfy(m -> assertThat(m).startsWith("graphs[0].name: 'd2' is a deployment's name")));
    Throwable deploymentLikeGraph = failure(applications.apply(file("g2", "g3", "p3"), SOURCE, false));
    assertThat(deploymentLikeGraph).isInstanceOfSatisfying(DeploymentValidationException.class, e ->
        assertThat(e.problems()).extracting(p -> p.path() + ": " + p.message())
            .anySatisfy(m -> assertThat(m).startsWith("deployments[0].name: 'g2' is the name of a graph already")));
    assertThat(graphs.graph("g3")).as("nothing of a refused file is stored").isEmpty();
    assertThat(serve.desired()).doesNotContainKey("d3");
  }

  @Test
  void pruneDeletesTheGraphsAFileNoLongerDeclaresAndKeepsWhatItsGraphsCall() {
    result(applications.apply(file("d4", "g4", "p4"), SOURCE, false));
    Applications.Result r = result(applications.apply(file("d5", "g5", "p5"), SOURCE, false, true));
    assertThat(r.prunedGraphs()).contains("g4").doesNotContain("g5");
    assertThat(r.prunedDeployments()).contains("d4").doesNotContain("d5");
    assertThat(graphs.graph("g4")).isEmpty();
    assertThat(graphs.graph("g5")).isPresent();
    assertThat(serve.desired()).containsKey("d5");
  }
}
