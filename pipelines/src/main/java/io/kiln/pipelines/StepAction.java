package io.kiln.pipelines;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What one step does, with its settings. Strings may hold {@code ${input.NAME}} placeholders, replaced by
 * the run's input when the run starts. Immutable; validated on construction.
 *
 * <p>Encoded (JSON in the cluster's maps, CBOR to the node running the step) with a closed set of type
 * names, never a class name.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "kind")
@JsonSubTypes({
    @JsonSubTypes.Type(value = StepAction.Fetch.class, name = "fetch"),
    @JsonSubTypes.Type(value = StepAction.Infer.class, name = "infer"),
    @JsonSubTypes.Type(value = StepAction.Webhook.class, name = "webhook"),
    @JsonSubTypes.Type(value = StepAction.Generate.class, name = "generate"),
    @JsonSubTypes.Type(value = StepAction.Custom.class, name = "class")})
public sealed interface StepAction {

  /** Largest input a fetch may copy unless it says otherwise: 1 GiB. */
  long DEFAULT_FETCH_MAX_BYTES = 1L << 30;
  /** Default timeout of a webhook POST. */
  long DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

  @JsonIgnore
  StepKind kind();

  /**
   * Copy {@code uri} ({@code file://} under the node's allowed roots, {@code http://}, {@code https://})
   * into the node-local cache, keyed by the URI; a cached copy is reused.
   *
   * @param maxBytes larger inputs fail the step
   */
  record Fetch(String uri, long maxBytes) implements StepAction {
    public Fetch {
      Objects.requireNonNull(uri, "uri");
      if (maxBytes < 1) {
        throw new IllegalArgumentException("fetch max_bytes must be positive, got " + maxBytes);
      }
    }

    @Override
    public StepKind kind() {
      return StepKind.FETCH;
    }
  }

  /**
   * Decode the file an earlier fetch step cached on this node and run it through this node's pool of
   * {@code deployment} (the version it serves when the step starts), or through a model graph's steps on this node's
   * pools ({@code graph: NAME} in YAML; see {@link io.kiln.pipelines.graphs.Graphs}).
   *
   * @param deployment the deployment called, or with {@code graph} the graph
   * @param input the fetch step whose file is the input
   * @param tensor the model input to fill for {@link InputFormat#RAW}; empty for the model's only input
   * @param graph whether {@code deployment} names a graph
   */
  record Infer(String deployment, String input, InputFormat format, String tensor, boolean graph)
      implements StepAction {
    public Infer {
      Objects.requireNonNull(deployment, "deployment");
      Objects.requireNonNull(input, "input");
      Objects.requireNonNull(format, "format");
      tensor = tensor == null ? "" : tensor;
    }

    /** A step calling a deployment. */
    public Infer(String deployment, String input, InputFormat format, String tensor) {
      this(deployment, input, format, tensor, false);
    }

    @Override
    public StepKind kind() {
      return StepKind.INFER;
    }
  }

  /** POST the run so far (input, step results) as JSON to {@code url}; a non-2xx answer fails the step. */
  record Webhook(String url, long timeoutMs) implements StepAction {
    public Webhook {
      Objects.requireNonNull(url, "url");
      if (timeoutMs < 1) {
        throw new IllegalArgumentException("webhook timeout_ms must be positive, got " + timeoutMs);
      }
    }

    @Override
    public StepKind kind() {
      return StepKind.WEBHOOK;
    }
  }

  /**
   * Run a {@link Step} implementation, instantiated by its public no-argument constructor on the node the
   * step runs on, once per attempt.
   *
   * @param className binary name of a class implementing {@link Step}
   * @param params the step's parameters ({@link StepContext#params()})
   */
  record Custom(String className, Map<String, String> params) implements StepAction {
    public Custom {
      Objects.requireNonNull(className, "className");
      params = params == null ? Map.of() : Map.copyOf(params);
    }

    @Override
    public StepKind kind() {
      return StepKind.CLASS;
    }
  }

  /**
   * Render {@code prompt} and generate text with this node's pool of {@code deployment}, a text generation model
   * ({@link io.kiln.pools.TextModels}): the prompt's {@code ${input.NAME}} placeholders are the run's input, its
   * {@code {{STEP.FIELD}}} references earlier steps' results (an output tensor of an infer step, lines joined by
   * {@code \n}; a field of any other step's result), rendered on the node the step runs on.
   *
   * @param chat the prompt is one user message rendered by the model's chat template (as
   *     {@code /v1/chat/completions} renders it); false: the prompt is the model's text as is ({@code /v1/completions})
   * @param temperature 0 is greedy: the same prompt always gives the same text
   * @param topP null: the model's default (1)
   * @param topK null: the model's default (all)
   * @param seed null: unseeded
   * @param stop at most {@link #MAX_STOPS} stop strings, none empty
   */
  record Generate(String deployment, String prompt, boolean chat, int maxTokens, double temperature, Double topP,
                  Integer topK, Long seed, List<String> stop) implements StepAction {

    /** Tokens a generate step asks for unless it says otherwise. */
    public static final int DEFAULT_MAX_TOKENS = 128;
    /** Stop strings at most, as OpenAI's API takes. */
    public static final int MAX_STOPS = 4;
    /** Longest prompt template, in characters. */
    public static final int MAX_PROMPT_CHARS = 65_536;

    public Generate {
      Objects.requireNonNull(deployment, "deployment");
      Objects.requireNonNull(prompt, "prompt");
      if (prompt.isEmpty() || prompt.length() > MAX_PROMPT_CHARS) {
        throw new IllegalArgumentException("generate prompt must hold 1 to " + MAX_PROMPT_CHARS + " characters, got "
            + prompt.length());
      }
      if (maxTokens < 1) {
        throw new IllegalArgumentException("generate max_tokens must be at least 1, got " + maxTokens);
      }
      if (!(temperature >= 0 && temperature <= 2)) {
        throw new IllegalArgumentException("generate temperature must be in [0, 2], got " + temperature);
      }
      if (topP != null && !(topP > 0 && topP <= 1)) {
        throw new IllegalArgumentException("generate top_p must be in (0, 1], got " + topP);
      }
      if (topK != null && topK < 0) {
        throw new IllegalArgumentException("generate top_k must be >= 0, got " + topK);
      }
      stop = stop == null ? List.of() : List.copyOf(stop);
      if (stop.size() > MAX_STOPS || stop.stream().anyMatch(String::isEmpty)) {
        throw new IllegalArgumentException("generate stop takes at most " + MAX_STOPS + " non-empty strings");
      }
    }

    @Override
    public StepKind kind() {
      return StepKind.GENERATE;
    }
  }
}
