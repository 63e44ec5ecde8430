package io.kiln.gateway.support;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/**
 * A {@link GatewayTestBase} whose cluster also serves the text models ({@link TestModels#text()}), with the calls
 * and checks the OpenAI API's tests share.
 */
public abstract class OpenAiTestBase extends GatewayTestBase {

  @BeforeAll
  void addTextModels() {
    TestModels.text().forEach(cluster::addModel);
  }

  /** POSTs {@code json} to {@code /v1/...} with {@code headers}. */
  protected HttpResponse<Buffer> openai(String path, String json, Map<String, String> headers) {
    MultiMap h = MultiMap.caseInsensitiveMultiMap().set("Content-Type", "application/json").addAll(headers);
    return join(http.post(gateway.httpPort(), HOST, path).putHeaders(h).sendBuffer(Buffer.buffer(json)));
  }

  protected HttpResponse<Buffer> openai(String path, String json) {
    return openai(path, json, Map.of());
  }

  /** GETs {@code path} with {@code headers}. */
  protected HttpResponse<Buffer> get(String path, Map<String, String> headers) {
    return join(http.get(gateway.httpPort(), HOST, path).putHeaders(MultiMap.caseInsensitiveMultiMap()
        .addAll(headers)).send());
  }

  /**
   * Checks that {@code r} is an OpenAI error with {@code status} and {@code param} (null: JSON null) and returns its
   * {@code error} object.
   */
  protected static JsonObject error(HttpResponse<Buffer> r, int status, String param) {
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(status);
    assertThat(r.getHeader("Content-Type")).startsWith("application/json");
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.fieldNames()).containsExactly("error");
    JsonObject error = body.getJsonObject("error");
    assertThat(error.fieldNames()).containsExactlyInAnyOrder("message", "type", "param", "code");
    assertThat(error.getString("message")).isNotBlank();
    assertThat(error.getString("param")).as(error.encode()).isEqualTo(param);
    return error;
  }

  /** The {@code kiln_gateway_requests_total} of protocol {@code openai} for a model, outcome and code. */
  protected double requests(String model, String outcome, String code) {
    Counter c = registry.find("kiln.gateway.requests").tags("protocol", "openai", "model", model, "outcome", outcome,
        "code", code).counter();
    return c == null ? 0 : c.count();
  }
}
