package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.OpenAiTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.TextModels;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code /v1/embeddings}: one OIP request whose {@code text_input} rows are the inputs, answered as OpenAI answers,
 * vectors as floats or base64 of their little-endian float32 bytes.
 */
class OpenAiEmbeddingsTest extends OpenAiTestBase {

  /** An encoder whose signature leaves the vector length open: only its answer says it (3, as the fake's). */
  private static final String OPEN = "open-encoder";

  @org.junit.jupiter.api.BeforeAll
  void addOpenEncoder() {
    cluster.addModel(new io.kiln.gateway.ModelInfo(OPEN, "1", List.of("1"), "python", TextModels.embedding(), true, 0));
  }

  @Test
  void floatVectorsOnePerInputInOrderWithTheirUsage() {
    HttpResponse<Buffer> r = openai("/v1/embeddings", "{\"model\": \"encoder\", "
        + "\"input\": [\"a b\", \"hello there world\"], \"encoding_format\": \"float\", \"user\": \"u\", \"unknown\": 1}");
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/json");
    assertThat(r.bodyAsString()).isEqualTo("{\"object\":\"list\",\"data\":["
        + "{\"object\":\"embedding\",\"index\":0,\"embedding\":[0.5,-0.25,3.0]},"
        + "{\"object\":\"embedding\",\"index\":1,\"embedding\":[0.5,-0.25,17.0]}],"
        + "\"model\":\"encoder\",\"usage\":{\"prompt_tokens\":5,\"total_tokens\":5}}");
    InferenceRequest sent = cluster.last().request();
    assertThat(sent.inputs()).hasSize(1);
    assertThat(sent.inputs().get(0).name()).isEqualTo(TextModels.TEXT_INPUT);
    assertThat(sent.inputs().get(0).datatype()).isEqualTo(DataType.BYTES);
    assertThat(sent.inputs().get(0).shape()).containsExactly(2);
    assertThat(sent.inputs().get(0).byteElements()).extracting(b -> new String(b, StandardCharsets.UTF_8))
        .containsExactly("a b", "hello there world");
    assertThat(sent.parameters()).isEmpty();
    assertThat(requests(TestModels.ENCODER, "ok", "200")).isPositive();
  }

  @Test
  void base64VectorsAreTheirLittleEndianFloat32Bytes() {
    HttpResponse<Buffer> r = openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"four\", "
        + "\"encoding_format\": \"base64\", \"dimensions\": 3}");
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    JsonObject item = r.bodyAsJsonObject().getJsonArray("data").getJsonObject(0);
    ByteBuffer expected = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putFloat(0.5f).putFloat(-0.25f)
        .putFloat(4f);
    assertThat(Base64.getDecoder().decode(item.getString("embedding"))).isEqualTo(expected.array());
    assertThat(item.getInteger("index")).isZero();
    assertThat(cluster.last().request().inputs().get(0).shape()).containsExactly(1);
  }

  @Test
  void dimensionsOtherThanTheModelsAreRefusedNamingDimensions() {
    JsonObject error = error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"x\", \"dimensions\": 2}"),
        400, "dimensions");
    assertThat(error.getString("message")).contains("3 dimensions");
    assertThat(cluster.sent).as("the signature says 3: refused before any work").isEmpty();
    error(openai("/v1/embeddings", "{\"model\": \"" + OPEN + "\", \"input\": \"x\", \"dimensions\": 8}"),
        400, "dimensions");
    assertThat(cluster.sent).as("only the answer says: refused after it").hasSize(1);
    assertThat(openai("/v1/embeddings", "{\"model\": \"" + OPEN + "\", \"input\": \"x\", \"dimensions\": 3}")
        .statusCode()).isEqualTo(200);
  }

  @Test
  void malformedOrUnsupportedInputIsRefusedNamingIt() {
    error(openai("/v1/embeddings", "{\"model\": \"encoder\"}"), 400, "input");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": []}"), 400, "input");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"\"}"), 400, "input");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": [\"a\", 5.5]}"), 400, "input");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": [\"a\", {}]}"), 400, "input[1]");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": [\"a\", \"\"]}"), 400, "input[1]");
    assertThat(error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": [[1, 2], [3]]}"), 400, "input")
        .getString("code")).isEqualTo("unsupported_parameter");
    assertThat(error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": [1, 2, 3]}"), 400, "input")
        .getString("code")).isEqualTo("unsupported_parameter");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"a\", \"encoding_format\": \"int8\"}"),
        400, "encoding_format");
    error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"a\", \"dimensions\": 0}"), 400, "dimensions");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void moreInputsThanTheModelBatchesAreRefusedNamingInput() {
    JsonObject error = error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": [\"a\", \"b\", \"c\", \"d\","
        + " \"e\"]}"), 400, "input");
    assertThat(error.getString("message")).contains("at most 4 inputs");
  }

  @Test
  void aStreamingModelIsNoEncoder() {
    ModelSignature generation = TextModels.generation();
    assertThat(TextModels.embeds(generation)).isFalse();
    error(openai("/v1/embeddings", "{\"model\": \"llm\", \"input\": \"a\"}"), 400, "model");
  }
}
