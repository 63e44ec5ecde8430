package io.kiln.pipelines;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.testkit.RunStamp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The counted figures of a job whose node was killed mid-batch, written as the reliability suite's
 * {@code job-loss.json} ({@code -Dkiln.reliability.out}, default {@code target/reliability}): every count read
 * from the output folder (the truth about what finished) and the job's status, none typed in.
 */
final class JobLossFigures {

  private JobLossFigures() {
  }

  /**
   * @param atKill the job's status read just before the kill
   * @param end its final status
   */
  static Map<String, Object> write(Path out, List<String> uris, JobStatus atKill, JobStatus end, long endedAfterKillMs)
      throws Exception {
    Map<String, JsonNode> results = JobCluster.results(out);
    Map<String, Integer> filesPerUri = new HashMap<>();
    for (JsonNode r : results.values()) {
      filesPerUri.merge(r.path("uri").asText(), 1, Integer::sum);
    }
    long withResult = uris.stream().filter(u -> results.containsKey(NodeCache.keyOf(u))).count();
    long extraFiles = filesPerUri.values().stream().mapToLong(n -> n - 1).sum();
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("scenario", "job-loss");
    f.putAll(RunStamp.fields());
    f.put("nodes", 3);
    f.put("inputs", uris.size());
    f.put("results", results.size());
    f.put("lost", uris.size() - withResult);
    // An input counted done twice, or two result files for one input: either is a duplicate.
    f.put("duplicated", Math.max(0, end.done() - withResult) + extraFiles);
    f.put("strayFiles", JobCluster.strays(out).size());
    f.put("doneBeforeKill", atKill.done());
    f.put("inFlightAtKill", atKill.inFlight());
    f.put("resultsOfKilledNodeBeforeKill", atKill.resultsByNode().getOrDefault("w2", 0L));
    f.put("resumedAfterKill", uris.size() - atKill.done());
    f.put("redispatched", end.failuresByCause().values().stream().mapToLong(Long::longValue).sum());
    f.put("failuresByCause", end.failuresByCause());
    f.put("resultsByNode", end.resultsByNode());
    f.put("failed", end.failed());
    f.put("endedAfterKillMs", endedAfterKillMs);
    String json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(f);
    Path dir = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("job-loss.json"), json);
    System.out.println("RELIABILITY job-loss " + new ObjectMapper().writeValueAsString(f));
    return f;
  }
}
