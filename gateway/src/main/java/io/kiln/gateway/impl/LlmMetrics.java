package io.kiln.gateway.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.MeterBuckets;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Text generation as its clients meet it, per model, for every stream of a model that keeps the {@link TextModels}
 * generation contract, whatever the protocol that opened it (OpenAI's completions and chat, Triton's generate and
 * generate_stream, gRPC ModelStreamInfer):
 * <ul>
 *   <li>{@code kiln_llm_time_to_first_token_seconds}: from the moment the gateway opens the stream (the request read
 *       and validated) to the first token's chunk arriving from the pool;</li>
 *   <li>{@code kiln_llm_inter_token_latency_seconds}: one observation per gap between two consecutive token chunks of
 *       a request (a decoder sends one chunk per token, so a request of n tokens gives n - 1);</li>
 *   <li>{@code kiln_llm_e2e_request_latency_seconds}: from opening to the request's end, one per request whatever
 *       its end (finished, failed, withdrawn);</li>
 *   <li>{@code kiln_llm_prompt_tokens_total}, {@code kiln_llm_generation_tokens_total}: the usage counts the model
 *       reports in its chunks ({@code prompt_tokens}, {@code completion_tokens}), added as chunks arrive, so a long
 *       generation's tokens count in the seconds they were made; a model whose chunks omit {@code completion_tokens}
 *       is counted one token per chunk;</li>
 *   <li>{@code kiln_llm_requests_total{finish_reason}}: one per request at its end: the model's finish reason
 *       ({@code stop}, {@code length}, ...; {@code stop} when it gave none, as OpenAI's API answers), {@code error}
 *       for a failed one, {@code abort} for one withdrawn (client gone, deadline, answer over the body limit).</li>
 * </ul>
 * The clock is the same for streamed and gathered answers: a gathered answer's client sees no token before the end,
 * but the server-side first-token and inter-token times are still those of its chunks. Histograms use the
 * {@link MeterBuckets#LATENCY} buckets, so they add up across nodes.
 *
 * <p>Thread-safe. A request's {@link Generation} is used by its stream's listener; a chunk costs a timer record, a
 * counter add and a look at the chunk's few tensors, no allocation.
 */
final class LlmMetrics {

  static final String ABORT = "abort";
  static final String ERROR = "error";
  static final String OTHER = "other";
  /** Finish reasons kept as labels; a model's other words count as {@value #OTHER}, so labels stay few. */
  private static final Set<String> REASONS = Set.of(TextModels.FINISH_STOP, TextModels.FINISH_LENGTH,
      "content_filter", "tool_calls", ABORT, ERROR);

  private final MeterRegistry registry;
  private final ConcurrentHashMap<String, Model> models = new ConcurrentHashMap<>();
  // Whether a model's signature keeps the generation contract, judged once per signature object (a deployment's
  // version keeps its own): judging builds the contract's signature, a dozen objects per streaming request otherwise.
  private final ConcurrentHashMap<String, Verdict> verdicts = new ConcurrentHashMap<>();

  private record Verdict(io.kiln.pools.ModelSignature signature, boolean generates) {
  }

  LlmMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  /** The meters of {@code model} (its name: streams open only for models the directory knows). */
  Model model(String model) {
    Model m = models.get(model);
    return m != null ? m : models.computeIfAbsent(model, name -> new Model(registry, name));
  }

  /** One request's record, from its opening at {@code openedNanos}. */
  Generation start(String model, long openedNanos) {
    return new Generation(model(model), openedNanos);
  }

  /** {@link #start} for a model of {@code signature} that generates text ({@link TextModels#generates}), else null. */
  Generation startIfGenerates(String model, io.kiln.pools.ModelSignature signature, long openedNanos) {
    Verdict v = verdicts.get(model);
    if (v == null || v.signature() != signature) {
      v = new Verdict(signature, TextModels.generates(signature));
      verdicts.put(model, v);
    }
    return v.generates() ? start(model, openedNanos) : null;
  }

  /** One model's meters. */
  static final class Model {
    private final MeterRegistry registry;
    private final String name;
    final Timer firstToken;
    final Timer interToken;
    final Timer endToEnd;
    final Counter promptTokens;
    final Counter generationTokens;
    private final ConcurrentHashMap<String, Counter> requests = new ConcurrentHashMap<>();

    private Model(MeterRegistry registry, String name) {
      this.registry = registry;
      this.name = name;
      firstToken = MeterBuckets.latency(Timer.builder("kiln.llm.time.to.first.token"))
          .description("Time from opening a text generation to its first token").tag("model", name)
          .register(registry);
      interToken = MeterBuckets.latency(Timer.builder("kiln.llm.inter.token.latency"))
          .description("Time between consecutive tokens of a text generation").tag("model", name)
          .register(registry);
      endToEnd = MeterBuckets.latency(Timer.builder("kiln.llm.e2e.request.latency"))
          .description("Time from opening a text generation to its end").tag("model", name).register(registry);
      promptTokens = Counter.builder("kiln.llm.prompt.tokens")
          .description("Prompt tokens of text generations, as their model reports them").tag("model", name)
          .register(registry);
      generationTokens = Counter.builder("kiln.llm.generation.tokens")
          .description("Tokens generated, as the model reports them").tag("model", name).register(registry);
    }

    Counter requests(String finishReason) {
      String reason = REASONS.contains(finishReason) ? finishReason : OTHER;
      Counter c = requests.get(reason);
      return c != null ? c : requests.computeIfAbsent(reason, r -> Counter.builder("kiln.llm.requests")
          .description("Text generations ended, by finish reason (abort: withdrawn; error: failed)")
          .tags("model", name, "finish_reason", r).register(registry));
    }
  }

  /**
   * One text generation's timing and usage. Its stream's listener calls {@link #chunk} on the request's context; its
   * owner calls {@link #end} once.
   */
  static final class Generation {
    private final Model model;
    private final long opened;
    private long last;
    private long chunks;
    private long promptTokens;
    private long completionTokens;
    private String finishReason;

    private Generation(Model model, long opened) {
      this.model = model;
      this.opened = opened;
    }

    /** A chunk of tokens arrived at {@code nowNanos}. */
    void chunk(InferenceResponse chunk, long nowNanos) {
      if (chunks++ == 0) {
        model.firstToken.record(Math.max(0, nowNanos - opened), TimeUnit.NANOSECONDS);
      } else {
        model.interToken.record(Math.max(0, nowNanos - last), TimeUnit.NANOSECONDS);
      }
      last = nowNanos;
      long prompt = -1;
      long completion = -1;
      List<Tensor> outputs = chunk.outputs();
      for (int i = 0; i < outputs.size(); i++) {
        Tensor t = outputs.get(i);
        String name = t.name();
        if (name.equals(TextModels.COMPLETION_TOKENS)) {
          completion = first(t);
        } else if (name.equals(TextModels.PROMPT_TOKENS)) {
          prompt = first(t);
        } else if (name.equals(TextModels.FINISH_REASON)) {
          String reason = firstText(t);
          finishReason = reason != null ? reason : finishReason;
        }
      }
      if (prompt > promptTokens) { // reported on every chunk: counted once, when first seen (or if it grew)
        model.promptTokens.increment(prompt - promptTokens);
        promptTokens = prompt;
      }
      long generated = completion >= 0 ? completion : chunks;
      if (generated > completionTokens) {
        model.generationTokens.increment(generated - completionTokens);
        completionTokens = generated;
      }
    }

    /**
     * The request ended at {@code nowNanos}: {@code outcome} null when its stream ended well (the model's finish
     * reason is recorded), else {@link #ERROR} or {@link #ABORT}.
     */
    void end(String outcome, long nowNanos) {
      model.endToEnd.record(Math.max(0, nowNanos - opened), TimeUnit.NANOSECONDS);
      model.requests(outcome != null ? outcome : finishReason != null ? finishReason : TextModels.FINISH_STOP)
          .increment();
    }

    /** The first element of an integer tensor, -1 when it has none. */
    private static long first(Tensor t) {
      byte[] d = t.data();
      if (t.datatype() == DataType.INT32 && d.length >= 4) {
        return (d[0] & 0xFF) | (d[1] & 0xFF) << 8 | (d[2] & 0xFF) << 16 | d[3] << 24;
      }
      if (t.datatype() == DataType.INT64 && d.length >= 8) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
          v = v << 8 | (d[i] & 0xFFL);
        }
        return v;
      }
      return -1;
    }

    /** The first element of a BYTES tensor when it is not empty (a finish reason: once a request), else null. */
    private static String firstText(Tensor t) {
      byte[] d = t.data();
      if (t.datatype() != DataType.BYTES || d.length < 5) {
        return null;
      }
      int n = (d[0] & 0xFF) | (d[1] & 0xFF) << 8 | (d[2] & 0xFF) << 16 | d[3] << 24;
      return n <= 0 || n > Math.min(64, d.length - 4) ? null
          : new String(d, 4, n, java.nio.charset.StandardCharsets.UTF_8);
    }
  }
}
