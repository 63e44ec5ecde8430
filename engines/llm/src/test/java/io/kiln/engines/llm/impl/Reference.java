package io.kiln.engines.llm.impl;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.List;

/** tiny-gpt's {@code reference.json}: prompts with their ids and torch's greedy 16-token continuations. */
record Reference(String text, int[] inputIds, int[] greedyIds, String greedyText) {

  static final int NEW_TOKENS = 16;

  static List<Reference> prompts() {
    JsonNode ref = TestModels.reference(TestModels.tinyGpt());
    List<Reference> out = new ArrayList<>();
    for (JsonNode p : ref.path("prompts")) {
      out.add(new Reference(p.path("text").asText(), TestModels.ints(p.path("input_ids")),
          TestModels.ints(p.path("greedy_ids")), p.path("greedy_text").asText()));
    }
    return out;
  }

  /** The greedy request that reproduces the reference (16 tokens, past the end-of-sequence token if sampled). */
  InferenceRequest greedy(Object... more) {
    Object[] params = new Object[6 + more.length];
    params[0] = TextModels.MAX_TOKENS;
    params[1] = (long) NEW_TOKENS;
    params[2] = TextModels.TEMPERATURE;
    params[3] = 0L;
    params[4] = TextModels.IGNORE_EOS;
    params[5] = true;
    System.arraycopy(more, 0, params, 6, more.length);
    return TestModels.request(text, params);
  }
}
