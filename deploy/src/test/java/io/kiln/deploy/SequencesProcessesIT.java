package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.deploy.e2e.VadAudio;
import io.kiln.testkit.OipRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sequences across real node processes (issue #36): three {@code kiln start} JVMs on one Hazelcast cluster (a head
 * without pools, {@code n1} and {@code n2} with a pool of {@code deploy/examples/vad/vad.yaml} each), speech streamed
 * as one sequence with each chunk sent through the next gateway in turn: every gateway routes it to the same node
 * (nobody told them), and the probabilities equal ONNX Runtime's own loop. Then the node holding it is SIGKILLed: the
 * sequence's next requests fail 503 naming the sequence (never answered from a fresh state elsewhere), and a new
 * sequence runs on the node left.
 */
class SequencesProcessesIT {

  static final ObjectMapper JSON = new ObjectMapper();
  static final String INFER = "/v2/models/vad/infer";

  static String deployment() throws Exception {
    return Files.readString(VadAudio.EXAMPLE)
        .replace("../../../models/vad/silero", VadAudio.MODEL.getParent().toString())
        .replace("pool: {workers_per_node: 2, worker_resources: {CPU: 0.5}",
            "pool: {workers_per_node: 1, node_selector: {zone: vad}, worker_resources: {CPU: 0.5}");
  }

  static String body(float[] audio, String id, boolean start) {
    OipRequest r = OipRequest.create().input(OipRequest.Input.fp32("input", new long[] {1, VadAudio.CHUNK}, audio))
        .input(OipRequest.Input.int64("sr", new long[0], 16_000)).parameter("sequence_id", id);
    return (start ? r.parameter("sequence_start", true) : r).json();
  }

  @Test
  void everyGatewayRoutesASequenceToItsNodeAndItsNodesDeathFailsItNamingIt(@TempDir Path dir) throws Exception {
    VadAudio.requireModel();
    float[][] chunks = VadAudio.chunks(VadAudio.speech(dir), 0);
    float[] want = VadAudio.directly(chunks);
    try (NodeLossProcessesIT.Trio c = new NodeLossProcessesIT.Trio("sequences", "zone=vad", "zone=vad")) {
      c.apply("head", deployment());
      c.awaitPools("head", "vad", "n1", "n2");
      c.awaitServing("vad", "head", "n1", "n2");
      List<String> gateways = List.of("head", "n1", "n2");
      String holder = null;
      for (int i = 0; i < chunks.length; i++) {
        HttpResponse<String> r = NodeLossIT.call(c.port(gateways.get(i % 3)), "POST", INFER, null,
            body(chunks[i], "speech", i == 0));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode answer = JSON.readTree(r.body());
        assertThat(answer.path("outputs")).hasSize(1);
        assertThat(answer.path("outputs").get(0).path("data").get(0).asDouble()).as("chunk %d", i)
            .isCloseTo(want[i], within(1e-6));
        String node = answer.path("parameters").path("kiln_node").asText();
        assertThat(holder == null ? node : holder).as("chunk %d ran where the sequence is", i).isEqualTo(node);
        holder = node;
      }

      String survivor = holder.equals("n1") ? "n2" : "n1";
      c.kill(holder);

      List<String> answers = new ArrayList<>();
      for (String via : List.of("head", survivor)) {
        await().atMost(NodeLossProcessesIT.AFTER_KILL).pollInterval(Duration.ofMillis(250)).until(() -> {
          HttpResponse<String> r = NodeLossIT.call(c.port(via), "POST", INFER, null, body(chunks[0], "speech", false));
          answers.add(via + ": " + r.statusCode() + " " + r.body());
          assertThat(r.statusCode()).as("never served from a fresh state: %s", answers).isNotEqualTo(200);
          return r.statusCode() == 503 && r.body().contains("sequence 'speech' was lost");
        });
      }
      assertThat(answers.get(answers.size() - 1)).contains("'" + holder + "'");

      HttpResponse<String> fresh = NodeLossIT.call(c.port("head"), "POST", INFER, null,
          body(chunks[0], "speech", true));
      assertThat(fresh.statusCode()).as(fresh.body()).isEqualTo(200);
      assertThat(JSON.readTree(fresh.body()).path("parameters").path("kiln_node").asText()).isEqualTo(survivor);
    }
  }
}
