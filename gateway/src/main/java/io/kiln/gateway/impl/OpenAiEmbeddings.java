package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.TextModels;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.Json;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * How {@code /v1/embeddings} answers from a model that keeps the {@link TextModels} embedding contract: OpenAI's
 * {@code {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}}, each vector
 * a JSON array of floats (written as the infer answers write FP32: shortest round-tripping decimals) or, with
 * {@code encoding_format: base64}, its little-endian float32 bytes in base64, as OpenAI sends them. One instance per
 * server, used on event loops (an answer above {@link FrontExchange#OFFLOAD_BYTES} is encoded on a worker thread).
 */
final class OpenAiEmbeddings extends FrontExchange.Protocol<OpenAiEmbeddings.Answer, Buffer> {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(OpenAiEmbeddings.class);

  OpenAiEmbeddings() {
    super(OpenAiApi.PROTOCOL, LOG, OpenAiApi.OK, Integer.toString(HttpApi.CLIENT_CLOSED));
  }

  /** One embeddings call's response. */
  static final class Answer extends OpenAiApi.Channel {
    Answer(HttpServerResponse resp) {
      super(resp);
    }
  }

  @Override
  String code(Answer a, ErrorMapper.Failure f) {
    return Integer.toString(f.httpStatus());
  }

  @Override
  void traceparent(Answer a, String traceparent) {
    a.resp.putHeader(GatewayTrace.TRACEPARENT, traceparent);
  }

  @Override
  void answer(Answer a, Buffer json) {
    HttpInfer.send(a.resp, 200, json);
  }

  @Override
  void error(Answer a, ErrorMapper.Failure f) {
    OpenAiApi.send(a, f);
  }

  /**
   * The vector length {@code model} declares for its {@value TextModels#EMBEDDING} output, or 0 when its signature
   * leaves it open (then only its answer tells).
   */
  static int declaredDimensions(ModelInfo model) {
    for (TensorSpec s : model.outputs()) {
      if (s.name().equals(TextModels.EMBEDDING) && s.shape().length == 2 && s.shape()[1] > 0) {
        return (int) Math.min(Integer.MAX_VALUE, s.shape()[1]);
      }
    }
    return 0;
  }

  /**
   * The answer's JSON.
   *
   * @throws OpenAiError naming {@code dimensions} when the vectors are not as long as the request says
   * @throws InferenceException INTERNAL when the model's answer does not keep the contract
   */
  static Buffer encode(InferenceResponse r, OpenAiRequests.Embed call, String model) {
    int rows = call.inputs().size();
    Tensor vectors = output(r, TextModels.EMBEDDING);
    if (vectors == null || vectors.datatype() != DataType.FP32 || vectors.shape().length != 2
        || vectors.shape()[0] != rows) {
      throw new InferenceException(InferenceException.Kind.INTERNAL, "model '" + model + "' answered no "
          + TextModels.EMBEDDING + " of FP32 [" + rows + ", d]");
    }
    int dims = (int) vectors.shape()[1];
    if (call.dimensions() > 0 && call.dimensions() != dims) {
      throw dimensions(model, dims, call.dimensions());
    }
    Tensor tokens = output(r, TextModels.PROMPT_TOKENS);
    long promptTokens = 0;
    if (tokens != null && tokens.elementCount() == rows && tokens.datatype() != DataType.BYTES) {
      for (Object n : GenerateCodec.elements(tokens)) {
        promptTokens += n instanceof Number x ? x.longValue() : 0;
      }
    }
    byte[] data = vectors.data();
    int rowBytes = dims * Float.BYTES;
    ByteSink out = new ByteSink(64 + rows * (call.base64() ? rowBytes * 4 / 3 + 64 : dims * 12 + 64));
    out.putAscii("{\"object\":\"list\",\"data\":[");
    ByteBuffer floats = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < rows; i++) {
      out.putAscii(i == 0 ? "{\"object\":\"embedding\",\"index\":" : ",{\"object\":\"embedding\",\"index\":");
      out.putLong(i);
      out.putAscii(",\"embedding\":");
      if (call.base64()) {
        out.put((byte) '"');
        out.put(Base64.getEncoder().encode(ByteBuffer.wrap(data, i * rowBytes, rowBytes)).array());
        out.put((byte) '"');
      } else {
        out.put((byte) '[');
        for (int j = 0; j < dims; j++) {
          float v = floats.getFloat((i * dims + j) * Float.BYTES);
          if (!Float.isFinite(v)) {
            throw new InferenceException(InferenceException.Kind.INTERNAL, "model '" + model
                + "' answered a non-finite embedding value");
          }
          if (j > 0) {
            out.put((byte) ',');
          }
          FloatFormat.put(out, v);
        }
        out.put((byte) ']');
      }
      out.put((byte) '}');
    }
    out.putAscii("],\"model\":");
    out.put(Json.encode(model).getBytes(StandardCharsets.UTF_8));
    out.putAscii(",\"usage\":{\"prompt_tokens\":");
    out.putLong(promptTokens);
    out.putAscii(",\"total_tokens\":");
    out.putLong(promptTokens);
    out.putAscii("}}");
    return Buffer.buffer(out.toArray());
  }

  /** The refusal of a {@code dimensions} the model does not make: Kiln's encoders do not shorten their vectors. */
  static OpenAiError dimensions(String model, int has, int asked) {
    return OpenAiError.invalid("dimensions", "model '" + model + "' makes vectors of " + has
        + " dimensions and cannot shorten them; got " + asked);
  }

  private static Tensor output(InferenceResponse r, String name) {
    for (Tensor t : r.outputs()) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    return null;
  }
}
