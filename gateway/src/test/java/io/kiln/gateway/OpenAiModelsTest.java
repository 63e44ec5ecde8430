package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.OpenAiTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.TextModels;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /v1/models[/{id}]}: the ready models that keep a text contract, whatever their engine, in OpenAI's list
 * shape; and the {@code /v1} routes open when the gateway has no API key.
 */
class OpenAiModelsTest extends OpenAiTestBase {

  @Test
  void theListHoldsOnlyTheReadyModelsThatKeepATextContract() {
    cluster.addModel(new ModelInfo("python-llm", "1", List.of("1"), "python", TextModels.generation(), true, 0));
    cluster.addModel(new ModelInfo("cold-llm", "1", List.of("1"), "python", TextModels.generation(), false, 0));
    HttpResponse<Buffer> r = get("/v1/models");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/json");
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.fieldNames()).containsExactly("object", "data");
    assertThat(body.getString("object")).isEqualTo("list");
    JsonArray data = body.getJsonArray("data");
    assertThat(data.stream().map(o -> ((JsonObject) o).getString("id")).toList())
        .as("not mlp, pair, cold-llm (not ready) ...")
        .containsExactly(TestModels.LLM, TestModels.ENCODER, "python-llm");
    JsonObject llm = data.getJsonObject(0);
    assertThat(llm.fieldNames()).containsExactly("id", "object", "created", "owned_by");
    assertThat(llm.getString("object")).isEqualTo("model");
    assertThat(llm.getString("owned_by")).isEqualTo("kiln");
    assertThat(llm.getLong("created")).isPositive();
  }

  @Test
  void oneModelIsItsListEntryOrAnOpenAi404() {
    HttpResponse<Buffer> r = get("/v1/models/" + TestModels.ENCODER, Map.of());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.bodyAsJsonObject().getString("id")).isEqualTo(TestModels.ENCODER);
    assertThat(r.bodyAsJsonObject().getString("object")).isEqualTo("model");
    for (String name : List.of("nope", TestModels.MLP)) {
      JsonObject error = error(get("/v1/models/" + name, Map.of()), 404, "model");
      assertThat(error.getString("code")).isEqualTo("model_not_found");
    }
    cluster.setNotReady(TestModels.LLM);
    HttpResponse<Buffer> cold = get("/v1/models/" + TestModels.LLM, Map.of());
    error(cold, 503, null);
    assertThat(cold.getHeader("Retry-After")).isEqualTo("2");
  }

  @Test
  void withoutAnApiKeyTheRoutesAreOpenWhateverAuthorizationIsSent() {
    assertThat(get("/v1/models", Map.of("Authorization", "Bearer anything")).statusCode()).isEqualTo(200);
    assertThat(openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}").statusCode()).isEqualTo(200);
  }

  @Test
  void theOipRoutesAreUntouched() {
    HttpResponse<Buffer> r = get("/v2/models/nope");
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(r.bodyAsJsonObject().getValue("error")).as("OIP's shape: a string").isInstanceOf(String.class);
  }
}
