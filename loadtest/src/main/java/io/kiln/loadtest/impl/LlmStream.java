package io.kiln.loadtest.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Arrays;

/**
 * One streamed OpenAI answer, event by event ({@link SseParser}'s data): text chunks ({@code choices[0].text} for
 * completions, {@code choices[0].delta.content} for chat) timed as they arrive, the usage chunk's
 * {@code completion_tokens}, an {@code error} event, {@code [DONE]}. Not thread-safe: one per response, on its event
 * loop.
 */
public final class LlmStream {
  private static final ObjectMapper JSON = new ObjectMapper();

  private long firstNs;
  private long lastNs;
  private long[] gaps = new long[16];
  private int chunks;
  private long usageTokens = -1;
  private boolean done;
  private String error;

  /** One event's data, received at {@code nowNs}. */
  public void onEvent(String data, long nowNs) {
    if (done || error != null) {
      return; // nothing after [DONE] or an error counts
    }
    if (data.equals("[DONE]")) {
      done = true;
      return;
    }
    JsonNode n;
    try {
      n = JSON.readTree(data);
    } catch (IOException e) {
      error = "a chunk is not JSON";
      return;
    }
    if (n == null || !n.isObject()) {
      error = "a chunk is not a JSON object";
      return;
    }
    JsonNode err = n.get("error");
    if (err != null && !err.isNull()) {
      JsonNode message = err.path("message");
      error = "error event: " + (message.isTextual() ? message.asText() : err.toString());
      return;
    }
    JsonNode usage = n.get("usage");
    if (usage != null && usage.path("completion_tokens").canConvertToLong()) {
      usageTokens = usage.path("completion_tokens").asLong();
    }
    JsonNode choice = n.path("choices").path(0);
    JsonNode text = choice.has("delta") ? choice.path("delta").path("content") : choice.path("text");
    if (text.isTextual() && !text.asText().isEmpty()) {
      if (chunks == 0) {
        firstNs = nowNs;
      } else {
        if (chunks - 1 == gaps.length) {
          gaps = Arrays.copyOf(gaps, gaps.length * 2);
        }
        gaps[chunks - 1] = nowNs - lastNs;
      }
      lastNs = nowNs;
      chunks++;
    }
  }

  /** Whether {@code [DONE]} arrived. */
  public boolean done() {
    return done;
  }

  /** The error event's message (or why the stream could not be read); null when none. */
  public String error() {
    return error;
  }

  public LlmTimings timings() {
    return new LlmTimings(firstNs, Arrays.copyOf(gaps, Math.max(0, chunks - 1)), chunks,
        usageTokens >= 0 ? usageTokens : chunks);
  }

  /** How the answer counts once its body has ended: {@code http:200} with its timings, or why it failed. */
  public Outcome outcome() {
    if (error != null) {
      return Outcome.judged("stream_error", false, Outcome.mask(error));
    }
    if (!done) {
      return Outcome.judged("stream_incomplete", false, "the stream ended without data: [DONE]");
    }
    return Outcome.http(200).with(timings());
  }
}
