package io.kiln.pipelines;

import static io.kiln.runtime.testing.Await.result;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pipelines.jobs.JobLoader;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.WireCodec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A {@link PipelineCluster} with a {@link PoolLoadBoard} and {@link Jobs} on every node, and helpers to
 * write job files and read an output folder. Public for the jobs package's tests.
 */
public final class JobCluster implements AutoCloseable {

  public static final String HEAD = PipelineCluster.HEAD;
  public static final String DEPLOYMENT = PipelineCluster.DEPLOYMENT;

  public final PipelineCluster pc;
  public final Map<String, PoolLoadBoard> boards = new LinkedHashMap<>();
  public final Map<String, Jobs> jobs = new LinkedHashMap<>();

  public JobCluster(Path root, String... nodeIds) throws Exception {
    this(root, PipelineCluster.IDENTITY, nodeIds);
  }

  /** @param model the model of deployment {@value #DEPLOYMENT} (input FP32 [-1, 4]) */
  public JobCluster(Path root, ModelSpec model, String... nodeIds) throws Exception {
    pc = new PipelineCluster(root, List.of(root), Map.of(DEPLOYMENT, model), nodeIds);
    for (String id : nodeIds) {
      PoolLoadBoard b = new PoolLoadBoard(pc.node(id));
      result(b.ready(), PipelineCluster.WAIT);
      boards.put(id, b);
      DeploymentResolver resolver = name -> name.equals(DEPLOYMENT)
          ? Optional.of(new InferTarget(name, "1", List.of(PipelineCluster.INPUT))) : Optional.empty();
      Jobs j = new Jobs(pc.node(id), pc.pipelines(id), resolver, b, System::currentTimeMillis, 200);
      result(j.start(), PipelineCluster.WAIT);
      jobs.put(id, j);
    }
    for (String id : nodeIds) {
      await().atMost(PipelineCluster.WAIT).until(() -> boards.get(HEAD).pools(DEPLOYMENT, "1").stream()
          .filter(p -> p.ready()).count() == nodeIds.length);
    }
  }

  public Jobs jobs(String node) {
    return jobs.get(node);
  }

  public Path root() {
    return pc.root;
  }

  /** Media files {@code clip-0 .. clip-(n-1)} (2 rows of 4 floats each) in {@code folder} under the root. */
  public Path mediaFolder(String folder, int n) throws Exception {
    Path dir = Files.createDirectories(pc.root.resolve(folder));
    for (int i = 0; i < n; i++) {
      Files.write(dir.resolve("clip-" + i + ".f32"), PipelineCluster.media("clip-" + i, 2));
    }
    return dir;
  }

  /** The loopback URL of slowly served media {@code clip-i}. */
  public String mediaUrl(int i) {
    return pc.url("/media/clip-" + i);
  }

  public JobSpec load(String yaml) throws Exception {
    Path file = pc.root.resolve("job.yaml");
    Files.writeString(file, yaml);
    return new JobLoader().load(file);
  }

  public JobStatus awaitEnd(String node, String id) {
    await().atMost(PipelineCluster.WAIT).until(() -> result(jobs(node).status(id)).map(s -> s.state().terminal())
        .orElse(false));
    return result(jobs(node).status(id)).orElseThrow();
  }

  /** Requests the deployment's pools completed, summed over the given nodes. */
  public long modelCalls(String... nodes) {
    PoolClient client = new PoolClient(pc.node(nodes[0]));
    long n = 0;
    for (String id : nodes) {
      n += result(client.stats(DEPLOYMENT, "1", id)).completed();
    }
    return n;
  }

  /** The result files of an output folder, parsed, by key. */
  public static Map<String, JsonNode> results(Path out) throws Exception {
    Map<String, JsonNode> r = new LinkedHashMap<>();
    try (Stream<Path> s = Files.list(out)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        String name = p.getFileName().toString();
        if (name.endsWith(".json") && NodeCache.isKey(name.substring(0, name.length() - 5))) {
          r.put(name.substring(0, name.length() - 5), WireCodec.json().readTree(Files.readAllBytes(p)));
        }
      }
    }
    return r;
  }

  /** Names in the output folder that are neither results nor the job's own files (e.g. leftover temp files). */
  public static List<String> strays(Path out) throws Exception {
    List<String> r = new ArrayList<>();
    try (Stream<Path> s = Files.list(out)) {
      s.map(p -> p.getFileName().toString()).filter(n -> !n.equals("_job.json") && !n.equals("_failed")
          && !(n.endsWith(".json") && NodeCache.isKey(n.substring(0, n.length() - 5)))).forEach(r::add);
    }
    return r;
  }

  /** The floats a result holds in its first output. */
  public static float[] outputData(JsonNode result) {
    JsonNode data = result.path("outputs").path(0).path("data");
    float[] v = new float[data.size()];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) data.get(i).asDouble();
    }
    return v;
  }

  public static float[] expected(String clip) {
    return PipelineCluster.expected(clip, 2);
  }

  public void crash(String id) {
    Jobs j = jobs.remove(id);
    boards.remove(id);
    pc.crash(id);
    if (j != null) {
      j.close();
    }
  }

  @Override
  public void close() {
    jobs.values().forEach(Jobs::close);
    boards.values().forEach(PoolLoadBoard::close);
    pc.close();
  }
}
