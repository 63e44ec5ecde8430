package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.MeterBuckets;
import io.kiln.testkit.OipRequest;
import io.micrometer.core.instrument.Gauge;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Health, metadata, readiness and metrics endpoints over a real HTTP client. */
class HttpEndpointsTest extends GatewayTestBase {

  @Test
  void liveAndReady() {
    HttpResponse<Buffer> live = get("/v2/health/live");
    assertThat(live.statusCode()).isEqualTo(200);
    assertThat(live.bodyAsJsonObject().getBoolean("live")).isTrue();

    // One model (cold) is declared but not ready; the server is ready all the same (not strict): it serves the
    // others, and cold's own readiness says it cannot.
    HttpResponse<Buffer> ready = get("/v2/health/ready");
    assertThat(ready.statusCode()).isEqualTo(200);
    assertThat(ready.bodyAsJsonObject().getBoolean("ready")).isTrue();
    assertThat(get("/v2/models/cold/ready").statusCode()).isEqualTo(503);
  }

  @Test
  void serverMetadata() {
    HttpResponse<Buffer> r = get("/v2");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/json");
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.getString("name")).isEqualTo("kiln");
    assertThat(body.getString("version")).isEqualTo(GatewayOptions.DEFAULT_SERVER_VERSION);
    // No repository routes are mounted on a bare gateway, so no model_repository.
    assertThat(body.getJsonArray("extensions")).containsExactly("binary_tensor_data", "model_configuration",
        "statistics", "generate", "system_shared_memory");
  }

  @Test
  void modelMetadataForTheServingAndAnExplicitVersion() {
    JsonObject m = get("/v2/models/mlp").bodyAsJsonObject();
    assertThat(m.getString("name")).isEqualTo("mlp");
    assertThat(m.getJsonArray("versions")).containsExactly("1", "2");
    assertThat(m.getString("platform")).isEqualTo("pytorch_torchscript");
    JsonObject input = m.getJsonArray("inputs").getJsonObject(0);
    assertThat(input.getString("name")).isEqualTo("input");
    assertThat(input.getString("datatype")).isEqualTo("FP32");
    assertThat(input.getJsonArray("shape")).isEqualTo(new JsonArray().add(-1).add(4));
    assertThat(m.getJsonArray("outputs").getJsonObject(0).getString("name")).isEqualTo("output");

    HttpResponse<Buffer> v1 = get("/v2/models/mlp/versions/1");
    assertThat(v1.statusCode()).isEqualTo(200);
    assertThat(v1.bodyAsJsonObject().getString("name")).isEqualTo("mlp");
  }

  @Test
  void unknownModelsVersionsAndEndpointsAre404WithAMessage() {
    HttpResponse<Buffer> model = get("/v2/models/nope");
    assertThat(model.statusCode()).isEqualTo(404);
    assertThat(model.bodyAsJsonObject().getString("error")).isEqualTo("model 'nope' not found");
    HttpResponse<Buffer> version = get("/v2/models/mlp/versions/9");
    assertThat(version.statusCode()).isEqualTo(404);
    assertThat(version.bodyAsJsonObject().getString("error")).isEqualTo("model 'mlp' has no version '9'");
    assertThat(get("/v2/models/nope/ready").statusCode()).isEqualTo(404);
    assertThat(get("/v2/models/mlp/versions/9/ready").statusCode()).isEqualTo(404);
    HttpResponse<Buffer> endpoint = get("/v3/whatever");
    assertThat(endpoint.statusCode()).isEqualTo(404);
    assertThat(endpoint.bodyAsJsonObject().getString("error")).contains("/v3/whatever");
    HttpResponse<Buffer> method = join(http.delete(gateway.httpPort(), HOST, "/v2/models/mlp").send());
    assertThat(method.statusCode()).isEqualTo(405);
    assertThat(method.bodyAsJsonObject().getString("error")).contains("DELETE");
  }

  @Test
  void modelReadiness() {
    HttpResponse<Buffer> ready = get("/v2/models/mlp/ready");
    assertThat(ready.statusCode()).isEqualTo(200);
    assertThat(ready.bodyAsJsonObject().getBoolean("ready")).isTrue();
    assertThat(ready.bodyAsJsonObject().getString("version")).isEqualTo("2");
    assertThat(get("/v2/models/mlp/versions/1/ready").bodyAsJsonObject().getString("version")).isEqualTo("1");

    HttpResponse<Buffer> cold = get("/v2/models/" + TestModels.COLD + "/ready");
    assertThat(cold.statusCode()).isEqualTo(503);
    assertThat(cold.getHeader("Retry-After")).isEqualTo("2");
    assertThat(cold.bodyAsJsonObject().getString("error")).isEqualTo("model 'cold' version '1' is not ready");

    cluster.setNotReady("mlp");
    assertThat(get("/v2/models/mlp/ready").statusCode()).isEqualTo(503);
  }

  @Test
  void metricsExposeGatewayJvmAndSharedRegistryMeters() {
    AtomicInteger depth = new AtomicInteger(7);
    Gauge.builder("kiln.pool.queue.depth", depth, AtomicInteger::get).tag("model", "mlp").register(registry);
    assertThat(postJson("/v2/models/mlp/infer", OipRequest.fp32("input", new long[] {1, 4}, 1, 2, 3, 4).json())
        .statusCode()).isEqualTo(200);
    assertThat(postJson("/v2/models/mlp/infer", "{\"inputs\":[]}").statusCode()).isEqualTo(400);
    assertThat(postJson("/v2/models/no-such-model/infer", "{\"inputs\":[]}").statusCode()).isEqualTo(404);

    HttpResponse<Buffer> r = get("/metrics");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).startsWith("text/plain");
    String text = r.bodyAsString();
    assertThat(text)
        .contains("kiln_gateway_requests_total{code=\"200\",model=\"mlp\",outcome=\"ok\",protocol=\"http\"}")
        .contains("kiln_gateway_requests_total{code=\"400\",model=\"mlp\",outcome=\"invalid\",protocol=\"http\"}")
        // An unknown name is not a label value: it would let clients create series at will.
        .contains("kiln_gateway_requests_total{code=\"404\",model=\"_unknown\",outcome=\"not_found\",protocol=\"http\"}")
        .doesNotContain("no-such-model")
        .contains("kiln_gateway_request_duration_seconds_bucket{model=\"mlp\",outcome=\"ok\",protocol=\"http\"")
        .contains("kiln_gateway_requests_in_flight 0")
        .contains("kiln_gateway_routes_total{reason=\"local\"}")
        .contains("jvm_memory_used_bytes")
        .contains("kiln_pool_queue_depth{model=\"mlp\"} 7");
    // The fixed buckets, the same on every node (so they add up across nodes), and no client-side quantiles.
    List<String> bounds = text.lines()
        .filter(l -> l.startsWith("kiln_gateway_request_duration_seconds_bucket{") && l.contains("outcome=\"ok\""))
        .map(l -> l.replaceAll(".*le=\"([^\"]+)\".*", "$1")).toList();
    assertThat(bounds).containsExactlyElementsOf(Stream.concat(Arrays.stream(MeterBuckets.LATENCY)
        .map(d -> Double.toString(d.toNanos() / 1e9)), Stream.of("+Inf")).toList());
    assertThat(text).doesNotContain("quantile=");
  }
}
