package io.kiln.engines.llm.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import io.kiln.pools.ModelLoadException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;

/**
 * A text model's folder as Hugging Face tools write it: {@value #MODEL_FILE} and {@value #TOKENIZER_FILE}, with
 * the optional {@code tokenizer_config.json}, {@code generation_config.json} and {@code config.json} read for the
 * limits, special tokens and chat template they declare.
 */
final class ModelFolder {

  static final String MODEL_FILE = "model.onnx";
  static final String TOKENIZER_FILE = "tokenizer.json";
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Tokenizers without a real limit declare a huge {@code model_max_length} (1e30); ignore such values. */
  private static final long NO_LIMIT = 10_000_000;

  private final Path dir;
  private final JsonNode tokenizerConfig;
  private final JsonNode generationConfig;
  private final JsonNode config;

  private ModelFolder(Path dir, JsonNode tokenizerConfig, JsonNode generationConfig, JsonNode config) {
    this.dir = dir;
    this.tokenizerConfig = tokenizerConfig;
    this.generationConfig = generationConfig;
    this.config = config;
  }

  /**
   * Reads the folder {@code dir}.
   *
   * @throws ModelLoadException when it is not a folder, lacks a required file, or a JSON file does not parse
   */
  static ModelFolder open(Path dir, String engine) {
    if (!Files.isDirectory(dir)) {
      throw new ModelLoadException("model uri " + dir + " (" + dir.toAbsolutePath() + ") is not a folder: the "
          + engine + " engine loads a folder holding " + MODEL_FILE + " and " + TOKENIZER_FILE);
    }
    for (String f : new String[] {MODEL_FILE, TOKENIZER_FILE}) {
      if (!Files.isRegularFile(dir.resolve(f))) {
        throw new ModelLoadException("model folder " + dir + " holds no " + f + " (the " + engine + " engine loads "
            + MODEL_FILE + " and " + TOKENIZER_FILE + ", as optimum-cli export onnx writes them)");
      }
    }
    return new ModelFolder(dir, json(dir.resolve("tokenizer_config.json")),
        json(dir.resolve("generation_config.json")), json(dir.resolve("config.json")));
  }

  private static JsonNode json(Path file) {
    if (!Files.isRegularFile(file)) {
      return MissingNode.getInstance();
    }
    try {
      return JSON.readTree(file.toFile());
    } catch (IOException e) {
      throw new ModelLoadException("model file " + file + " is not valid JSON: " + e.getMessage(), e);
    }
  }

  Path dir() {
    return dir;
  }

  Path modelFile() {
    return dir.resolve(MODEL_FILE);
  }

  Path tokenizerFile() {
    return dir.resolve(TOKENIZER_FILE);
  }

  /** The most positions the model was trained for ({@code config.json}), if it says. */
  OptionalInt positions() {
    for (String f : new String[] {"max_position_embeddings", "n_positions", "n_ctx", "seq_length"}) {
      if (config.path(f).canConvertToInt() && config.path(f).asInt() > 0) {
        return OptionalInt.of(config.path(f).asInt());
      }
    }
    return OptionalInt.empty();
  }

  /** The tokenizer's {@code model_max_length}, if it declares a real one. */
  OptionalInt modelMaxLength() {
    JsonNode n = tokenizerConfig.path("model_max_length");
    return n.isNumber() && n.asDouble() > 0 && n.asDouble() < NO_LIMIT ? OptionalInt.of(n.asInt())
        : OptionalInt.empty();
  }

  /** A {@code config.json} integer such as {@code n_head}, if present. */
  OptionalInt configInt(String... names) {
    for (String f : names) {
      if (config.path(f).canConvertToInt()) {
        return OptionalInt.of(config.path(f).asInt());
      }
    }
    return OptionalInt.empty();
  }

  /** The end-of-sequence ids {@code generation_config.json} and {@code config.json} declare. */
  Set<Integer> eosIds() {
    Set<Integer> ids = new TreeSet<>();
    for (JsonNode source : new JsonNode[] {generationConfig, config}) {
      JsonNode eos = source.path("eos_token_id");
      if (eos.isArray()) {
        eos.forEach(e -> ids.add(e.asInt()));
      } else if (eos.canConvertToInt()) {
        ids.add(eos.asInt());
      }
    }
    return ids;
  }

  /** The beginning-of-sequence id, if declared. */
  OptionalInt bosId() {
    for (JsonNode source : new JsonNode[] {generationConfig, config}) {
      if (source.path("bos_token_id").canConvertToInt()) {
        return OptionalInt.of(source.path("bos_token_id").asInt());
      }
    }
    return OptionalInt.empty();
  }

  /** A special token of {@code tokenizer_config.json} ({@code bos_token}, {@code eos_token}): text or {content}. */
  Optional<String> specialToken(String field) {
    JsonNode n = tokenizerConfig.path(field);
    if (n.isTextual()) {
      return Optional.of(n.asText());
    }
    return n.path("content").isTextual() ? Optional.of(n.path("content").asText()) : Optional.empty();
  }

  /** The chat template: the string, or the one named {@code default} of a list of named templates. */
  Optional<String> chatTemplate() {
    JsonNode t = tokenizerConfig.path("chat_template");
    if (t.isTextual() && !t.asText().isBlank()) {
      return Optional.of(t.asText());
    }
    if (t.isArray()) {
      for (JsonNode named : t) {
        if ("default".equals(named.path("name").asText()) && named.path("template").isTextual()) {
          return Optional.of(named.path("template").asText());
        }
      }
    }
    return Optional.empty();
  }
}
