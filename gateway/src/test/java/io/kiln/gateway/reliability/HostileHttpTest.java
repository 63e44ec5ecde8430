package io.kiln.gateway.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.Figures;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.Mutator;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The hostile-input fuzzer's slice through the real HTTP server (the in-process decoders get many more
 * inputs in {@code HostileInputFuzzTest}): mutated JSON and binary-extension bodies, random
 * {@code Inference-Header-Content-Length} values and random model paths. No answer is a 5xx, every error is
 * JSON with a message, and the server serves a valid request afterwards.
 */
@Tag("slow")
class HostileHttpTest extends GatewayTestBase {

  static final long ITERATIONS = Figures.knob("fuzz.http.iterations", 400);
  static final long SEED = Figures.knob("fuzz.seed", 20261130L);

  static final String JSON = "{\"id\":\"a\",\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],"
      + "\"data\":[1,2,3,4,5,6,7,8]}],\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":true}}]}";
  static final String PAIR = "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT32\",\"shape\":[1,2],\"data\":[7,8]},"
      + "{\"name\":\"b\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"hello\",\"\"]}]}";
  static final String BINARY_HEADER = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],"
      + "\"parameters\":{\"binary_data_size\":16}}]}";

  @Test
  void mutatedRequestsGetA4xxOrAnAnswerNeverA5xx() {
    Mutator m = new Mutator(SEED);
    byte[] binary = Buffer.buffer(BINARY_HEADER).appendBytes(new byte[16]).getBytes();
    List<String> paths = List.of("/v2/models/mlp/infer", "/v2/models/pair/infer", "/v2/models/mlp/versions/1/infer",
        "/v2/models/id_FP32/infer", "/v2/models/nope/infer", "/v2/models/id_BYTES/infer");
    Map<Integer, Integer> byStatus = new TreeMap<>();
    long answered = 0;
    long refusedCleanly = 0;
    long serverErrors = 0;
    long errorsNotJson = 0;
    long noAnswer = 0;
    List<String> problems = new ArrayList<>();
    for (long i = 0; i < ITERATIONS; i++) {
      boolean bin = m.nextInt(3) == 0;
      byte[] seed = bin ? binary : (m.nextInt(2) == 0 ? JSON : PAIR).getBytes(StandardCharsets.UTF_8);
      byte[] body = m.mutate(seed, JSON.getBytes(StandardCharsets.UTF_8));
      Map<String, String> headers = bin ? Map.of("Inference-Header-Content-Length", m.nextInt(4) == 0
          ? Integer.toString(m.nextInt(body.length + 3) - 1) : Integer.toString(BINARY_HEADER.length())) : Map.of();
      String path = m.nextInt(4) == 0 ? m.pick(paths) : bin ? paths.get(0) : (seed[20] == 'a' ? paths.get(1) : paths.get(0));
      String what = "input #" + i + " (seed " + SEED + "): " + new String(body, StandardCharsets.UTF_8);
      HttpResponse<Buffer> r;
      try {
        r = post(path, Buffer.buffer(body), headers);
      } catch (RuntimeException e) {
        noAnswer++;
        note(problems, what + " -> no answer: " + e);
        continue;
      }
      byStatus.merge(r.statusCode(), 1, Integer::sum);
      if (r.statusCode() >= 500) {
        serverErrors++;
        note(problems, what + " -> " + r.statusCode() + " " + r.bodyAsString());
      } else if (r.statusCode() == 200) {
        answered++;
      } else if (hasJsonError(r)) {
        refusedCleanly++;
      } else {
        errorsNotJson++;
        note(problems, what + " -> " + r.statusCode() + " without a JSON error: " + r.bodyAsString());
      }
    }
    HttpResponse<Buffer> ok = postJson("/v2/models/mlp/infer", JSON);
    new Figures("fuzz-http-server").put("seed", SEED).put("requests", ITERATIONS).put("answered", answered)
        .put("refusedCleanly", refusedCleanly).put("serverErrors", serverErrors).put("errorsNotJson", errorsNotJson)
        .put("noAnswer", noAnswer).put("validRequestAfterStatus", ok.statusCode()).put("byStatus", byStatus)
        .put("problems", problems).write();
    assertThat(answered + refusedCleanly + serverErrors + errorsNotJson + noAnswer).isEqualTo(ITERATIONS);
    assertThat(serverErrors).as("5xx answers: %s", problems).isZero();
    assertThat(errorsNotJson).as("errors without a JSON message: %s", problems).isZero();
    assertThat(noAnswer).as("requests without an answer: %s", problems).isZero();
    assertThat(byStatus).containsKey(400);
    assertThat(ok.statusCode()).isEqualTo(200);
  }

  private static boolean hasJsonError(HttpResponse<Buffer> r) {
    try {
      String error = r.bodyAsJsonObject().getString("error");
      return error != null && !error.isBlank();
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static void note(List<String> problems, String what) {
    if (problems.size() < 10) {
      problems.add(what);
    }
  }
}
