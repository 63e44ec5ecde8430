package io.kiln.engines.llm.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import io.kiln.pools.InferenceException;
import io.kiln.pools.TextModels;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model's chat template ({@code tokenizer_config.json}'s {@code chat_template}) rendered with Jinjava the way
 * Hugging Face's {@code apply_chat_template} renders it: blocks trimmed and left-stripped, with {@code messages},
 * {@code add_generation_prompt=true}, {@code bos_token}, {@code eos_token} and a {@code raise_exception} function.
 * Thread-safe (Jinjava renders concurrently).
 */
final class ChatTemplate {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long MAX_OUTPUT = 16L << 20;

  private final Jinjava jinjava;
  private final String template;
  private final String bos;
  private final String eos;

  ChatTemplate(String template, String bos, String eos) {
    this.template = template;
    this.bos = bos;
    this.eos = eos;
    this.jinjava = new Jinjava(JinjavaConfig.newBuilder().withTrimBlocks(true).withLstripBlocks(true)
        .withMaxOutputSize(MAX_OUTPUT).build());
    jinjava.registerFunction(new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raise",
        String.class));
  }

  /** Called by templates that refuse a conversation ({@code raise_exception('...')}). */
  public static String raise(String message) {
    throw new IllegalArgumentException(message);
  }

  /**
   * The prompt for the conversation {@code messagesJson} (a JSON array of {@code {"role", "content"}}).
   *
   * @throws InferenceException INVALID_INPUT naming {@code text_input} for messages that are not such an array or
   *     that the template refuses
   */
  String render(String messagesJson) {
    Map<String, Object> context = new HashMap<>();
    context.put("messages", messages(messagesJson));
    context.put("add_generation_prompt", true);
    context.put("bos_token", bos);
    context.put("eos_token", eos);
    RenderResult r = jinjava.renderForResult(template, context);
    for (TemplateError e : r.getErrors()) {
      if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
        Throwable cause = e.getException();
        while (cause != null && !(cause instanceof IllegalArgumentException) && cause.getCause() != null) {
          cause = cause.getCause();
        }
        String why = cause instanceof IllegalArgumentException ? cause.getMessage() : e.getMessage();
        throw InferenceException.invalid(TextModels.TEXT_INPUT + ": the model's chat template refused these"
            + " messages: " + why);
      }
    }
    return r.getOutput();
  }

  static List<Map<String, Object>> messages(String json) {
    JsonNode array;
    try {
      array = JSON.readTree(json);
    } catch (IOException e) {
      throw notMessages("it is not JSON (" + e.getMessage().lines().findFirst().orElse("") + ")");
    }
    if (array == null || !array.isArray() || array.isEmpty()) {
      throw notMessages("it is not a non-empty JSON array");
    }
    List<Map<String, Object>> messages = new ArrayList<>(array.size());
    for (JsonNode m : array) {
      if (!m.isObject() || !m.path("role").isTextual()) {
        throw notMessages("message " + messages.size() + " has no role");
      }
      Map<String, Object> message = new LinkedHashMap<>();
      m.fields().forEachRemaining(f -> {
        if (f.getValue().isValueNode()) {
          message.put(f.getKey(), f.getValue().isNull() ? null : f.getValue().asText());
        }
      });
      message.put("content", content(m.path("content"), messages.size()));
      messages.add(message);
    }
    return messages;
  }

  /** Text content, or the text parts of an OpenAI content array joined. */
  private static String content(JsonNode c, int index) {
    if (c.isTextual()) {
      return c.asText();
    }
    if (c.isMissingNode() || c.isNull()) {
      return "";
    }
    if (c.isArray()) {
      StringBuilder text = new StringBuilder();
      for (JsonNode part : c) {
        if (!"text".equals(part.path("type").asText()) || !part.path("text").isTextual()) {
          throw notMessages("message " + index + " has a content part that is not text");
        }
        text.append(part.path("text").asText());
      }
      return text.toString();
    }
    throw notMessages("message " + index + "'s content is not text");
  }

  private static InferenceException notMessages(String why) {
    return InferenceException.invalid(TextModels.TEXT_INPUT + ": with " + TextModels.INPUT_FORMAT + " "
        + TextModels.FORMAT_CHAT + " it must be a JSON array of {\"role\", \"content\"} messages, but " + why);
  }
}
