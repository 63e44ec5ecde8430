package io.kiln.loadtest;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * An OpenAI-API generation workload: streamed (or, {@code stream} false, whole-answer) {@code /v1/completions} or {@code /v1/chat/completions} requests whose
 * prompt and output lengths are drawn from a seeded distribution. Given as a run's {@link LoadOptions#source()}, it
 * makes the run an LLM run: answers are read as Server-Sent Events as they arrive, and the result carries
 * {@link RunResult.Llm} (time to first token, inter-token latency, output tokens per second).
 *
 * <p>Request {@code i} is a pure function of {@code (seed, i)}: the same workload sends the same requests in the same
 * order, run after run. Lengths are in words (a word is roughly a token; no tokenizer is involved): a prompt is an
 * optional shared prefix (one of {@code prefixes} distinct ones of {@code prefixWords} words, picked per request) and
 * a unique part of {@code max(1, round(N(promptWords, promptStddev)))} words; {@code max_tokens} is
 * {@code max(1, round(N(outputTokens, outputStddev)))}, sent with {@code ignore_eos: true} so the output length is
 * exact on servers that honour it. Thread-safe and non-blocking.
 *
 * @param api          which endpoint
 * @param model        the {@code model} field
 * @param prefixes     distinct shared prefixes (0: none); with a chat request the prefix is the system message
 * @param prefixWords  words per shared prefix
 * @param stream       {@code stream: true} (Server-Sent Events, each chunk timed) or false (one JSON answer: its time
 *                     to first token is its whole latency, its tokens the usage's {@code completion_tokens})
 */
public record LlmWorkload(Api api, String model, double promptWords, double promptStddev, double outputTokens,
    double outputStddev, int prefixes, int prefixWords, long seed, boolean stream) implements RequestSource {

  public static final double DEFAULT_PROMPT_WORDS = 128;
  public static final double DEFAULT_OUTPUT_TOKENS = 64;
  public static final int DEFAULT_PREFIX_WORDS = 256;
  public static final long DEFAULT_SEED = 42;
  /** Longest prompt part or output a request may ask for (a guard against a mistyped mean). */
  public static final int MAX_LENGTH = 1 << 20;

  private static final String[] WORDS = ("the of and to in is was for on that with as by at from his her it an were "
      + "are which this be or has had first one their its new after who they two not been have more other time all "
      + "she during city world year school would only most people over state also some many when can may under "
      + "river music house light garden window paper stone market winter summer morning evening table letter")
      .split(" ");

  /** The two streamed generation endpoints of the OpenAI API. */
  public enum Api {
    COMPLETIONS("/v1/completions"), CHAT("/v1/chat/completions");

    private final String path;

    Api(String path) {
      this.path = path;
    }

    public String path() {
      return path;
    }

    public String cliName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** {@code completions} or {@code chat}. */
    public static Api parse(String s) {
      return switch (s.trim().toLowerCase(Locale.ROOT)) {
        case "completions" -> COMPLETIONS;
        case "chat" -> CHAT;
        default -> throw new IllegalArgumentException("--llm must be completions or chat, got '" + s + "'");
      };
    }
  }

  /** A streamed workload. */
  public LlmWorkload(Api api, String model, double promptWords, double promptStddev, double outputTokens,
                     double outputStddev, int prefixes, int prefixWords, long seed) {
    this(api, model, promptWords, promptStddev, outputTokens, outputStddev, prefixes, prefixWords, seed, true);
  }

  public LlmWorkload {
    Objects.requireNonNull(api, "api");
    Objects.requireNonNull(model, "model");
    if (model.isBlank()) {
      throw new IllegalArgumentException("model must not be blank");
    }
    if (!(promptWords >= 1 && promptWords <= MAX_LENGTH) || !(outputTokens >= 1 && outputTokens <= MAX_LENGTH)) {
      throw new IllegalArgumentException("promptWords and outputTokens must be in 1.." + MAX_LENGTH + ", got "
          + promptWords + " and " + outputTokens);
    }
    if (!(promptStddev >= 0) || !(outputStddev >= 0)) {
      throw new IllegalArgumentException("standard deviations must be >= 0");
    }
    if (prefixes < 0 || prefixes > 100_000 || prefixWords < 1 || prefixWords > MAX_LENGTH) {
      throw new IllegalArgumentException("prefixes must be 0..100000 and prefixWords 1.." + MAX_LENGTH);
    }
  }

  /** Fixed lengths, no shared prefix, the default seed. */
  public static LlmWorkload of(Api api, String model, int promptWords, int outputTokens) {
    return new LlmWorkload(api, model, promptWords, 0, outputTokens, 0, 0, DEFAULT_PREFIX_WORDS, DEFAULT_SEED);
  }

  /** This workload with {@code n} shared prefixes of {@code words} words each. */
  public LlmWorkload withPrefixes(int n, int words) {
    return new LlmWorkload(api, model, promptWords, promptStddev, outputTokens, outputStddev, n, words, seed, stream);
  }

  /** This workload streamed ({@code true}) or answered whole. */
  public LlmWorkload withStream(boolean on) {
    return new LlmWorkload(api, model, promptWords, promptStddev, outputTokens, outputStddev, prefixes, prefixWords,
        seed, on);
  }

  /** This workload with another seed (other prompts and prefixes). */
  public LlmWorkload withSeed(long s) {
    return new LlmWorkload(api, model, promptWords, promptStddev, outputTokens, outputStddev, prefixes, prefixWords,
        s, stream);
  }

  /** What request {@code index} asks for. */
  public record Shape(int prefix, int promptWords, int maxTokens) {
  }

  /** The lengths drawn for request {@code index} ({@code prefix} -1: none). */
  public Shape shape(long index) {
    SplittableRandom r = random(index);
    int prefix = prefixes == 0 ? -1 : r.nextInt(prefixes);
    return new Shape(prefix, draw(r, promptWords, promptStddev), draw(r, outputTokens, outputStddev));
  }

  @Override
  public HttpCall request(long index) {
    Shape s = shape(index);
    String prompt = userText(index, s);
    String prefix = s.prefix() < 0 ? null : prefixText(s.prefix());
    StringBuilder json = new StringBuilder(prompt.length() + (prefix == null ? 0 : prefix.length()) + 256);
    json.append("{\"model\":").append(quote(model));
    if (api == Api.CHAT) {
      json.append(",\"messages\":[");
      if (prefix != null) {
        json.append("{\"role\":\"system\",\"content\":").append(quote(prefix)).append("},");
      }
      json.append("{\"role\":\"user\",\"content\":").append(quote(prompt)).append("}]");
    } else {
      json.append(",\"prompt\":").append(quote(completionPrompt(prefix, prompt)));
    }
    json.append(",\"max_tokens\":").append(s.maxTokens()).append(",\"ignore_eos\":true");
    json.append(stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}" : ",\"stream\":false}");
    return HttpCall.json(api.path(), json.toString().getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The prompt text request {@code index} of a {@link Api#COMPLETIONS} workload sends (its shared prefix, a newline,
   * its own part): what a client driving the model without HTTP gives it, so both see the same tokens.
   */
  public String completionPrompt(long index) {
    Shape s = shape(index);
    return completionPrompt(s.prefix() < 0 ? null : prefixText(s.prefix()), userText(index, s));
  }

  private static String completionPrompt(String prefix, String prompt) {
    return prefix == null ? prompt : prefix + "\n" + prompt;
  }

  private String userText(long index, Shape s) {
    SplittableRandom words = random(index ^ 0x5DEECE66DL);
    StringBuilder prompt = new StringBuilder(s.promptWords() * 7).append("request-").append(index).append(':');
    for (int i = 1; i < s.promptWords(); i++) {
      prompt.append(' ').append(WORDS[words.nextInt(WORDS.length)]);
    }
    return prompt.toString();
  }

  /** Shared prefix {@code i}: the same words for the same seed, different for each {@code i}. */
  String prefixText(int i) {
    SplittableRandom r = new SplittableRandom(seed * 31 + i + 0x9E3779B97F4A7C15L);
    StringBuilder sb = new StringBuilder(prefixWords * 7).append("system-prompt-").append(i).append('.');
    for (int w = 1; w < prefixWords; w++) {
      sb.append(' ').append(WORDS[r.nextInt(WORDS.length)]);
    }
    return sb.toString();
  }

  /** The workload as plain values for the JSON summary. */
  public Map<String, Object> describe() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("api", api.cliName());
    m.put("path", api.path());
    m.put("promptWords", promptWords);
    m.put("promptStddev", promptStddev);
    m.put("outputTokens", outputTokens);
    m.put("outputStddev", outputStddev);
    m.put("prefixes", prefixes);
    if (prefixes > 0) {
      m.put("prefixWords", prefixWords);
    }
    m.put("seed", seed);
    m.put("stream", stream);
    return m;
  }

  private SplittableRandom random(long index) {
    return new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index);
  }

  private static int draw(SplittableRandom r, double mean, double stddev) {
    double v = stddev == 0 ? mean : mean + stddev * gaussian(r);
    return (int) Math.max(1, Math.min(MAX_LENGTH, Math.round(v)));
  }

  private static double gaussian(SplittableRandom r) { // Box-Muller: SplittableRandom has no nextGaussian on 17
    double u1 = 1 - r.nextDouble();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * r.nextDouble());
  }

  private static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        default -> {
          if (c < 0x20) {
            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
