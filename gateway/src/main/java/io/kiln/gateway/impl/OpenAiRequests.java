package io.kiln.gateway.impl;

import static io.kiln.gateway.impl.OpenAiFields.array;
import static io.kiln.gateway.impl.OpenAiFields.bool;
import static io.kiln.gateway.impl.OpenAiFields.integer;
import static io.kiln.gateway.impl.OpenAiFields.number;
import static io.kiln.gateway.impl.OpenAiFields.object;
import static io.kiln.gateway.impl.OpenAiFields.onlyDefault;
import static io.kiln.gateway.impl.OpenAiFields.string;
import static io.kiln.gateway.impl.OpenAiFields.zeroPenalty;

import io.kiln.pools.TextModels;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * OpenAI's request bodies read into what the {@link TextModels} contract carries: the text input and the request
 * parameters. Every field is checked before anything is sent, and a refusal names it ({@link OpenAiError}). Stateless.
 */
final class OpenAiRequests {

  /** The legacy completions endpoint's {@code max_tokens} when the request gives none, as OpenAI's. */
  static final long COMPLETIONS_DEFAULT_MAX_TOKENS = 16;
  static final int MAX_STOPS = 4;
  private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");

  /**
   * A completions or chat request in the contract's terms.
   *
   * @param textInput the prompt, or (chat) the messages as a compact JSON array of {@code {"role", "content"}}
   * @param parameters the contract's request parameters ({@link TextModels#MAX_TOKENS} …, and
   *     {@link TextModels#INPUT_FORMAT} {@link TextModels#FORMAT_CHAT} for chat)
   */
  record Text(String model, boolean chat, boolean stream, boolean includeUsage, String textInput,
              Map<String, Object> parameters) {
  }

  /**
   * An embeddings request.
   *
   * @param dimensions the vector length the client expects, or 0 when it names none
   */
  record Embed(String model, List<String> inputs, boolean base64, int dimensions) {
  }

  private OpenAiRequests() {
  }

  /** {@code POST /v1/completions} ({@code chat} false) or {@code /v1/chat/completions}. */
  static Text text(JsonObject json, boolean chat) {
    String model = OpenAiFields.model(json);
    String input = chat ? messages(json) : prompt(json);
    Map<String, Object> p = new LinkedHashMap<>();
    Long max = integer(json, "max_tokens", 1, Integer.MAX_VALUE);
    Long maxCompletion = integer(json, "max_completion_tokens", 1, Integer.MAX_VALUE);
    if (maxCompletion != null) {
      max = maxCompletion; // the newer name, which OpenAI's chat API says replaces max_tokens
    }
    if (max == null && !chat) {
      max = COMPLETIONS_DEFAULT_MAX_TOKENS;
    }
    put(p, TextModels.MAX_TOKENS, max);
    put(p, TextModels.TEMPERATURE, number(json, "temperature", 0, 2, false));
    put(p, TextModels.TOP_P, number(json, "top_p", 0, 1, true));
    Long topK = integer(json, "top_k", -1, Integer.MAX_VALUE);
    put(p, TextModels.TOP_K, topK == null ? null : Math.max(0, topK)); // -1 (vLLM's "all") is the contract's 0
    put(p, TextModels.SEED, integer(json, "seed", Long.MIN_VALUE, Long.MAX_VALUE));
    put(p, TextModels.STOP, stop(json));
    put(p, TextModels.IGNORE_EOS, bool(json, "ignore_eos"));
    if (chat) {
      p.put(TextModels.INPUT_FORMAT, TextModels.FORMAT_CHAT);
    }
    Boolean stream = bool(json, "stream");
    JsonObject options = object(json, "stream_options");
    Boolean usage = null;
    if (options != null) {
      Object v = options.getValue("include_usage");
      if (v != null && !(v instanceof Boolean)) {
        throw OpenAiError.invalid("stream_options.include_usage", "must be true or false");
      }
      usage = (Boolean) v;
    }
    string(json, "user");
    refused(json, chat);
    return new Text(model, chat, Boolean.TRUE.equals(stream), Boolean.TRUE.equals(usage), input, p);
  }

  /** The fields whose non-default values ask for what Kiln does not do. */
  private static void refused(JsonObject json, boolean chat) {
    onlyDefault(json, "n", "n other than 1 (one choice per request)", 1);
    zeroPenalty(json, "presence_penalty");
    zeroPenalty(json, "frequency_penalty");
    onlyDefault(json, "logit_bias", "logit_bias", Map.of());
    if (chat) {
      onlyDefault(json, "logprobs", "logprobs", false);
      onlyDefault(json, "top_logprobs", "top_logprobs", 0);
      onlyDefault(json, "tools", "tool calling", new JsonArray());
      onlyDefault(json, "functions", "function calling", new JsonArray());
      for (String field : List.of("tool_choice", "function_call")) {
        Object v = json.getValue(field);
        if (v != null && !"none".equals(v) && !"auto".equals(v)) {
          throw OpenAiError.unsupported(field, "tool calling");
        }
      }
      JsonObject format = object(json, "response_format");
      if (format != null && !"text".equals(format.getValue("type"))) {
        throw OpenAiError.unsupported("response_format", "a response format other than text");
      }
    } else {
      onlyDefault(json, "logprobs", "logprobs"); // an integer or null: any number asks for them
      onlyDefault(json, "echo", "echo", false);
      onlyDefault(json, "best_of", "best_of other than 1", 1);
      onlyDefault(json, "suffix", "suffix", "");
    }
  }

  private static void put(Map<String, Object> p, String key, Object value) {
    if (value != null) {
      p.put(key, value);
    }
  }

  private static String prompt(JsonObject json) {
    Object v = json.getValue("prompt");
    if (v instanceof String s) {
      return s;
    }
    if (v == null) {
      throw OpenAiError.invalid("prompt", "required: a string");
    }
    if (v instanceof JsonArray a) {
      if (a.size() == 1 && a.getValue(0) instanceof String s) {
        return s;
      }
      if (!a.isEmpty() && (a.getValue(0) instanceof Number || a.getValue(0) instanceof JsonArray)) {
        throw OpenAiError.unsupported("prompt", "a prompt of token ids");
      }
      if (a.size() > 1) {
        throw OpenAiError.unsupported("prompt", "more than one prompt per request");
      }
    }
    throw OpenAiError.invalid("prompt", "must be a string or an array of one string");
  }

  /** The messages as the contract's compact JSON array of {role, content}, content flattened to a string. */
  private static String messages(JsonObject json) {
    JsonArray messages = array(json, "messages");
    if (messages == null || messages.isEmpty()) {
      throw OpenAiError.invalid("messages", "required: a non-empty array of {role, content}");
    }
    JsonArray out = new JsonArray();
    for (int i = 0; i < messages.size(); i++) {
      String at = "messages[" + i + "]";
      if (!(messages.getValue(i) instanceof JsonObject m)) {
        throw OpenAiError.invalid(at, "must be an object with role and content");
      }
      Object role = m.getValue("role");
      if (!(role instanceof String r) || !ROLES.contains(r)) {
        throw OpenAiError.invalid(at + ".role", "must be one of system, developer, user, assistant, tool; got "
            + (role == null ? "none" : role));
      }
      out.add(new JsonObject().put("role", r).put("content", content(m.getValue("content"), r, at + ".content")));
    }
    return out.encode();
  }

  private static String content(Object v, String role, String at) {
    if (v instanceof String s) {
      return s;
    }
    if (v == null) {
      if (role.equals("assistant")) { // an assistant turn that only called tools has no content
        return "";
      }
      throw OpenAiError.invalid(at, "required: a string or an array of text parts");
    }
    if (!(v instanceof JsonArray parts)) {
      throw OpenAiError.invalid(at, "must be a string or an array of text parts");
    }
    StringBuilder text = new StringBuilder();
    for (int j = 0; j < parts.size(); j++) {
      String partAt = at + "[" + j + "]";
      if (!(parts.getValue(j) instanceof JsonObject part)) {
        throw OpenAiError.invalid(partAt, "must be an object {\"type\": \"text\", \"text\": ...}");
      }
      Object type = part.getValue("type");
      if (!"text".equals(type)) {
        if (type instanceof String t) {
          throw OpenAiError.unsupported(partAt + ".type", "content of type '" + t + "' (text only)");
        }
        throw OpenAiError.invalid(partAt + ".type", "must be \"text\"");
      }
      if (!(part.getValue("text") instanceof String t)) {
        throw OpenAiError.invalid(partAt + ".text", "must be a string");
      }
      if (j > 0) {
        text.append('\n'); // parts are separate paragraphs to the template, as other OpenAI servers join them
      }
      text.append(t);
    }
    return text.toString();
  }

  /** {@code stop} as the contract's one form that cannot be misread: a JSON array of strings, or null. */
  private static String stop(JsonObject json) {
    Object v = json.getValue("stop");
    if (v == null) {
      return null;
    }
    JsonArray stops;
    if (v instanceof String s) {
      stops = new JsonArray().add(s);
    } else if (v instanceof JsonArray a) {
      stops = a;
    } else {
      throw OpenAiError.invalid("stop", "must be a string or an array of up to " + MAX_STOPS + " strings");
    }
    if (stops.size() > MAX_STOPS) {
      throw OpenAiError.invalid("stop", "at most " + MAX_STOPS + " stop strings, got " + stops.size());
    }
    for (int i = 0; i < stops.size(); i++) {
      if (!(stops.getValue(i) instanceof String s) || s.isEmpty()) {
        throw OpenAiError.invalid(v instanceof String ? "stop" : "stop[" + i + "]", "must be a non-empty string");
      }
    }
    return stops.isEmpty() ? null : stops.encode();
  }

  /** {@code POST /v1/embeddings}. */
  static Embed embed(JsonObject json) {
    String model = OpenAiFields.model(json);
    Object v = json.getValue("input");
    List<String> inputs = new ArrayList<>();
    if (v instanceof String s) {
      inputs.add(s);
    } else if (v instanceof JsonArray a) {
      for (int i = 0; i < a.size(); i++) {
        Object x = a.getValue(i);
        if (x instanceof Number || x instanceof JsonArray) {
          throw OpenAiError.unsupported("input", "input of token ids");
        }
        if (!(x instanceof String s)) {
          throw OpenAiError.invalid("input[" + i + "]", "must be a string");
        }
        inputs.add(s);
      }
    } else {
      throw OpenAiError.invalid("input", v == null ? "required: a string or an array of strings"
          : "must be a string or an array of strings");
    }
    if (inputs.isEmpty()) {
      throw OpenAiError.invalid("input", "must hold at least one string");
    }
    for (int i = 0; i < inputs.size(); i++) {
      if (inputs.get(i).isEmpty()) {
        throw OpenAiError.invalid(v instanceof String ? "input" : "input[" + i + "]", "must not be empty");
      }
    }
    String format = string(json, "encoding_format");
    if (format != null && !format.equals("float") && !format.equals("base64")) {
      throw OpenAiError.invalid("encoding_format", "must be float or base64, got '" + format + "'");
    }
    Long dimensions = integer(json, "dimensions", 1, Integer.MAX_VALUE);
    string(json, "user");
    return new Embed(model, inputs, "base64".equals(format), dimensions == null ? 0 : dimensions.intValue());
  }
}
