package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.gateway.support.OpenAiTestBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** With an API key configured, every {@code /v1} route wants {@code Authorization: Bearer <key>}; no other route. */
class OpenAiAuthTest extends OpenAiTestBase {

  private static final String KEY = "sk-kiln-test";

  @Override
  protected GatewayOptions.Builder configure(GatewayOptions.Builder options) {
    return options.apiKey(KEY);
  }

  @Test
  void aRequestWithoutTheKeyIs401InOpenAisShape() {
    double before = requests("_unknown", "invalid", "401");
    for (Map<String, String> headers : new Map[] {Map.of(), Map.of("Authorization", "Bearer sk-wrong"),
        Map.of("Authorization", KEY), Map.of("Authorization", "Basic " + KEY)}) {
      HttpResponse<Buffer> r = openai("/v1/chat/completions", "{\"model\": \"llm\", \"messages\": "
          + "[{\"role\": \"user\", \"content\": \"Hi\"}]}", headers);
      JsonObject error = error(r, 401, null);
      assertThat(error.getString("type")).isEqualTo("authentication_error");
      assertThat(error.getString("code")).isEqualTo("invalid_api_key");
      assertThat(r.getHeader("WWW-Authenticate")).isEqualTo("Bearer");
      error(get("/v1/models", headers), 401, null);
      error(get("/v1/no-such-route", headers), 401, null);
    }
    assertThat(cluster.sent).isEmpty();
    assertThat(requests("_unknown", "invalid", "401") - before).as("each inference request recorded once").isEqualTo(4);
  }

  @Test
  void theKeyOpensEveryV1Route() {
    Map<String, String> auth = Map.of("Authorization", "Bearer " + KEY);
    assertThat(get("/v1/models", auth).statusCode()).isEqualTo(200);
    assertThat(get("/v1/models/llm", auth).statusCode()).isEqualTo(200);
    assertThat(openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}", auth).statusCode()).isEqualTo(200);
    assertThat(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"p\"}", auth).statusCode())
        .isEqualTo(200);
  }

  @Test
  void theOtherRoutesDoNotAskForIt() {
    assertThat(get("/v2/health/ready", Map.of()).statusCode()).isEqualTo(200);
    assertThat(postJson("/v2/models/mlp/infer", "{\"inputs\": [{\"name\": \"input\", \"shape\": [1, 4], "
        + "\"datatype\": \"FP32\", \"data\": [1, 2, 3, 4]}]}").statusCode()).isEqualTo(200);
  }

  @Test
  void theKeyIsValidatedAndNeverShown() {
    GatewayOptions options = GatewayOptions.builder().apiKey(KEY).build();
    assertThat(options.apiKey()).isEqualTo(KEY);
    assertThat(options.toString()).doesNotContain(KEY).contains("apiKey=(set)");
    assertThat(options.toBuilder().build()).isEqualTo(options);
    assertThat(GatewayOptions.builder().apiKey("").build().apiKey()).isNull();
    assertThat(GatewayOptions.defaults().apiKey()).isNull();
    assertThatThrownBy(() -> GatewayOptions.builder().apiKey("two words")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("apiKey");
  }
}
