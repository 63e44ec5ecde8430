package io.kiln.deploy;

import static io.kiln.deploy.KilnCliTest.kiln;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kiln job}: local validation before anything is sent, and the status a person reads. */
class JobCommandTest {

  @TempDir
  Path tmp;

  @Test
  void anInvalidJobFileIsReportedWithLineAndColumnAndNothingIsSent() throws Exception {
    Path f = tmp.resolve("job.yaml");
    Files.writeString(f, "name: clips\ndeployment: mlp\ninputs: {folder: nowhere}\noutput: out\nretries: -1\n");
    // No node listens there: a request would fail differently.
    KilnCliTest.Run r = kiln("job", "submit", f.toString(), "--address", "127.0.0.1:" + KilnCliTest.closedPort());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.errLines().get(0)).contains("is invalid; no job was started");
    assertThat(r.err()).contains("job.yaml:3:18: inputs.folder: no such folder")
        .contains("job.yaml:5:10: retries:");
  }

  @Test
  void theExampleJobFileIsValid() throws Exception {
    Path example = KilnCliTest.repositoryRoot().resolve("deploy/examples/jobs/clips.yaml");
    var spec = new io.kiln.pipelines.jobs.JobLoader().load(example);
    assertThat(spec.inputs()).hasSize(3);
    assertThat(spec.deployment()).isEqualTo("mlp");
  }

  @Test
  void statusShowsAProgressBarCountsRateEtaAndCauses() throws Exception {
    var s = new ObjectMapper().readTree("""
        {"id": "clips-1", "target": "deployment mlp", "state": "RUNNING", "total": 200, "done": 50, "failed": 2,
         "inFlight": 8, "skipped": 10, "rowsPerSecond": 12.5, "etaSeconds": 12,
         "failuresByCause": {"fetch": 3, "node_lost": 1}, "resultsByNode": {"a": 30, "b": 10},
         "output": "/data/out", "coordinator": "a", "error": ""}
        """);
    String text = JobCommand.render(s);
    assertThat(text).contains("job clips-1 (deployment mlp): RUNNING")
        .contains("[##########x.............................]  25% 50/200 done, 2 failed, 8 in flight")
        .contains("rate 12.5 inputs/s, ETA 12 s").contains("fetch=3 node_lost=1").contains("a=30 b=10");
    assertThat(kiln("job").out()).contains("submit").contains("status").contains("logs")
        .contains("cancel").contains("resume").contains("list");
  }
}
