package io.kiln.gateway.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;

/**
 * How {@code /v1/completions} and {@code /v1/chat/completions} answer from the chunks of a model that keeps the
 * {@link TextModels} generation contract: gathered into one JSON answer, or (with {@code stream}) Server-Sent
 * Events exactly as OpenAI frames them — {@code data: {json}\n\n} per chunk with text, the first chat chunk's delta
 * carrying the role, {@code finish_reason} null until the last, with {@code stream_options.include_usage} a last
 * chunk with no choices and the usage, then {@code data: [DONE]\n\n}. A chunk with no text is skipped unless it
 * carries the finish reason. Until the first event is written a failure is an error answer with its status; after
 * it, a {@code data: {"error": {...}}} event, and the stream ends without {@code [DONE]}.
 *
 * <p>Flow control as {@link GenerateApi}'s: a full write queue pauses the stream until it drains. One instance per
 * server, used on event loops.
 */
final class OpenAiCompletions extends FrontExchange.Protocol<OpenAiCompletions.Answer, Void> {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(OpenAiCompletions.class);
  private static final Buffer DONE = Buffer.buffer("data: [DONE]\n\n");

  private final long maxBodyBytes;

  OpenAiCompletions(long maxBodyBytes) {
    super(OpenAiApi.PROTOCOL, LOG, OpenAiApi.OK, Integer.toString(HttpApi.CLIENT_CLOSED));
    this.maxBodyBytes = maxBodyBytes;
  }

  /** One completions call: its response, what the request asked, and what was gathered or written so far. */
  static final class Answer extends OpenAiApi.Channel {
    final boolean chat;
    final long created;
    final String id;
    String model;
    boolean stream;
    boolean includeUsage;
    final StringBuilder text = new StringBuilder(); // gathered (no stream)
    long textBytes;
    String finishReason;
    long promptTokens;
    long completionTokens;
    boolean started; // stream: the headers and a first event are written
    boolean finished; // stream: the chunk with the finish reason is written

    Answer(HttpServerResponse resp, boolean chat, String id, long created) {
      super(resp);
      this.chat = chat;
      this.id = id;
      this.created = created;
    }

    @Override
    String textField() {
      return chat ? "messages" : "prompt";
    }
  }

  @Override
  String code(Answer a, ErrorMapper.Failure f) {
    return a.started ? OpenAiApi.OK : Integer.toString(f.httpStatus());
  }

  @Override
  void traceparent(Answer a, String traceparent) {
    a.resp.putHeader(GatewayTrace.TRACEPARENT, traceparent);
  }

  @Override
  void chunk(FrontExchange<Answer, Void> ex, InferenceResponse chunk) {
    Answer a = ex.channel();
    byte[] utf8 = element(chunk, TextModels.TEXT_OUTPUT);
    String text = utf8 == null ? "" : new String(utf8, StandardCharsets.UTF_8);
    byte[] reason = element(chunk, TextModels.FINISH_REASON);
    String finish = reason == null || reason.length == 0 ? null : new String(reason, StandardCharsets.UTF_8);
    long prompt = count(chunk, TextModels.PROMPT_TOKENS);
    long completion = count(chunk, TextModels.COMPLETION_TOKENS);
    a.promptTokens = prompt >= 0 ? prompt : a.promptTokens;
    a.completionTokens = completion >= 0 ? completion : a.completionTokens;
    if (!a.stream) {
      a.textBytes += text.length() == 0 ? 0 : utf8.length;
      if (a.textBytes > maxBodyBytes) {
        ex.cancel("the gathered answer exceeds the body limit"); // the token withdraws the stream
        ex.fail(new InferenceException(InferenceException.Kind.TOO_LARGE, "the completion exceeds " + maxBodyBytes
            + " bytes; ask for fewer max_tokens or use stream: true"));
        return;
      }
      a.text.append(text);
      a.finishReason = finish != null ? finish : a.finishReason;
      return;
    }
    HttpServerResponse resp = a.resp;
    if (resp.closed() || a.finished || (text.isEmpty() && finish == null)) {
      return;
    }
    event(a, choice(a, text, finish));
    a.finished = finish != null;
    ex.pauseWhileFull(resp);
  }

  @Override
  void ended(FrontExchange<Answer, Void> ex, Map<String, Object> parameters) {
    ex.reply(null);
  }

  @Override
  void answer(Answer a, Void none) {
    HttpServerResponse resp = a.resp;
    if (resp.closed()) {
      return;
    }
    if (!a.stream) {
      JsonObject choice = new JsonObject().put("index", 0);
      if (a.chat) {
        choice.put("message", new JsonObject().put("role", "assistant").put("content", a.text.toString()));
      } else {
        choice.put("text", a.text.toString());
      }
      choice.put("logprobs", null).put("finish_reason", a.finishReason != null ? a.finishReason
          : TextModels.FINISH_STOP);
      JsonObject body = head(a, a.chat ? "chat.completion" : "text_completion").put("choices", new JsonArray()
          .add(choice)).put("usage", usage(a));
      resp.setStatusCode(200).putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.JSON).end(body.toBuffer());
      return;
    }
    if (!a.finished) { // a model that ended without a finish reason still ends the choice for its client
      event(a, choice(a, "", TextModels.FINISH_STOP));
    }
    if (a.includeUsage) {
      event(a, head(a, chunkObject(a)).put("choices", new JsonArray()).put("usage", usage(a)));
    }
    resp.end(DONE);
  }

  @Override
  void error(Answer a, ErrorMapper.Failure f) {
    HttpServerResponse resp = a.resp;
    if (resp.closed() || resp.ended()) {
      return;
    }
    if (a.started) {
      resp.end(Buffer.buffer("data: ").appendBuffer(OpenAiApi.errorBody(a, f).toBuffer()).appendString("\n\n"));
      return;
    }
    OpenAiApi.send(a, f);
  }

  /** One streamed chunk holding {@code text} (the role too, on a chat's first) and the finish reason or null. */
  private static JsonObject choice(Answer a, String text, String finish) {
    JsonObject choice = new JsonObject().put("index", 0);
    if (a.chat) {
      JsonObject delta = new JsonObject();
      if (!a.started) {
        delta.put("role", "assistant").put("content", text);
      } else if (!text.isEmpty()) {
        delta.put("content", text);
      }
      choice.put("delta", delta);
    } else {
      choice.put("text", text);
    }
    choice.put("logprobs", null).put("finish_reason", finish);
    JsonObject chunk = head(a, chunkObject(a)).put("choices", new JsonArray().add(choice));
    if (a.includeUsage) {
      chunk.put("usage", null); // as OpenAI: every chunk has the field, only the last its value
    }
    return chunk;
  }

  private static void event(Answer a, JsonObject json) {
    if (!a.started) {
      a.started = true;
      a.resp.setStatusCode(200).setChunked(true).putHeader(HttpHeaders.CONTENT_TYPE, GenerateApi.EVENT_STREAM)
          .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache");
    }
    a.resp.write(Buffer.buffer("data: ").appendBuffer(json.toBuffer()).appendString("\n\n"));
  }

  private static String chunkObject(Answer a) {
    return a.chat ? "chat.completion.chunk" : "text_completion";
  }

  private static JsonObject head(Answer a, String object) {
    return new JsonObject().put("id", a.id).put("object", object).put("created", a.created).put("model", a.model);
  }

  private static JsonObject usage(Answer a) {
    return new JsonObject().put("prompt_tokens", a.promptTokens).put("completion_tokens", a.completionTokens)
        .put("total_tokens", a.promptTokens + a.completionTokens);
  }

  /** The first element of a BYTES output, or null when the chunk lacks it (or garbles it). */
  private static byte[] element(InferenceResponse r, String name) {
    Tensor t = output(r, name);
    if (t == null || t.datatype() != DataType.BYTES || t.data().length < 4) {
      return null;
    }
    byte[] data = t.data();
    int n = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).getInt();
    return n < 0 || n > data.length - 4 ? null : Arrays.copyOfRange(data, 4, 4 + n);
  }

  /** The first element of an integer output, or -1 when the chunk lacks it. */
  private static long count(InferenceResponse r, String name) {
    Tensor t = output(r, name);
    if (t == null || t.elementCount() < 1 || t.datatype() == DataType.BYTES) {
      return -1;
    }
    return GenerateCodec.elements(t).get(0) instanceof Number n ? n.longValue() : -1;
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
