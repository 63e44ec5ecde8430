package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.kiln.engines.llm.impl.TestModels.Collected;
import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.TextModels;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Continuous batching changes nothing a sequence computes (issue #35). The reference is a plain ONNX Runtime greedy
 * loop written here (no Kiln code: batch 1, the prompt in one call, then one token a call with {@code
 * past_key_values} fed back, argmax). {@value #STREAMS} streams with prompts of 1 to {@value #MAX_PROMPT} tokens and
 * {@code max_tokens} of 1 to {@value #MAX_NEW} join a runner at seeded random steps and are stepped together as a
 * worker steps them (each opened when due, then {@code runner.next(open streams)} every step); each must produce
 * exactly the plain loop's tokens, with the default cache, a cache small enough to force preemptions, chunked prefill
 * (16 tokens a step) and the prefix cache over prompts sharing prefixes. Seeded sampling gives the same text alone
 * and inside the batch.
 */
class ContinuousBatchingCorrectnessTest {

  static final int STREAMS = 64;
  static final int MAX_PROMPT = 120;
  static final int MAX_NEW = 24;
  /** Streams join at a step in [0, JOIN_WINDOW). */
  static final int JOIN_WINDOW = 60;

  private static final String[] WORDS = ("the of and to in is was for on that with as by at from his her it an"
      + " were are which this be or have had not but one all their there been has when who more will would river"
      + " house garden winter morning engine kiln model stream token batch quiet yellow seven under over through"
      + " between Paris Berlin Tokyo München café naïve über 42 1999 3.14 ! ? , . ; : ( ) \" ' - hello world"
      + " story mountain library computer window paper summer ocean silver forest city").split(" ");

  private static HuggingFaceTokenizer tokenizer;
  private static PlainGreedy plain;

  /** A prompt, its ids (the test's own tokenization) and the plain loop's greedy continuation. */
  record Prompt(String text, int[] ids, int maxTokens, int joinStep) {
  }

  @BeforeAll
  static void load() throws Exception {
    Path folder = TestModels.tinyGpt();
    tokenizer = HuggingFaceTokenizer.builder().optTokenizerPath(folder.resolve("tokenizer.json"))
        .optAddSpecialTokens(false).optPadding(false).optTruncation(false).build();
    plain = new PlainGreedy(folder.resolve("model.onnx"));
  }

  @AfterAll
  static void close() throws Exception {
    if (plain != null) {
      plain.close();
    }
    if (tokenizer != null) {
      tokenizer.close();
    }
  }

  static int[] encode(String text) {
    long[] ids = tokenizer.encode(text, false, false).getIds();
    return Arrays.stream(ids).mapToInt(Math::toIntExact).toArray();
  }

  /** A text of about {@code tokens} tokens (at least that many, or exactly one for 1) from seeded words. */
  static String words(Random random, String start, int tokens) {
    StringBuilder b = new StringBuilder(start);
    if (b.isEmpty()) {
      b.append(WORDS[random.nextInt(WORDS.length)]);
    }
    while (encode(b.toString()).length < tokens) {
      b.append(' ').append(WORDS[random.nextInt(WORDS.length)]);
    }
    return b.toString();
  }

  /** {@value #STREAMS} prompts of 1..{@value #MAX_PROMPT} tokens, each after one of {@code prefixes} (or none). */
  static List<Prompt> prompts(long seed, List<String> prefixes) {
    Random random = new Random(seed);
    List<Prompt> out = new ArrayList<>();
    for (int i = 0; i < STREAMS; i++) {
      int target = i == 0 ? 1 : i == 1 ? MAX_PROMPT : 1 + random.nextInt(MAX_PROMPT);
      String start = prefixes.isEmpty() ? "" : prefixes.get(random.nextInt(prefixes.size()));
      String text = words(random, start, target);
      int[] ids = encode(text);
      while (ids.length > MAX_PROMPT) { // a long word past the target: trim words off the end
        text = text.substring(0, text.lastIndexOf(' '));
        ids = encode(text);
      }
      int maxTokens = i == 0 ? MAX_NEW : 1 + random.nextInt(MAX_NEW);
      out.add(new Prompt(text, ids, maxTokens, random.nextInt(JOIN_WINDOW)));
    }
    assertThat(out.stream().mapToInt(p -> p.ids().length).max().getAsInt()).isGreaterThan(MAX_PROMPT - 10);
    if (prefixes.isEmpty()) {
      assertThat(out.stream().mapToInt(p -> p.ids().length).min().getAsInt()).isEqualTo(1);
    }
    return out;
  }

  static InferenceRequest greedy(Prompt p) {
    return TestModels.request(p.text(), TextModels.MAX_TOKENS, (long) p.maxTokens(), TextModels.TEMPERATURE, 0L,
        TextModels.IGNORE_EOS, true);
  }

  /**
   * A quarter of the prompt's {@code max_tokens}, 1 to 6 (top-p over tiny-gpt's flat distribution sorts the whole
   * vocabulary at every token: the slow part of this test).
   */
  static int sampledTokens(Prompt p) {
    return (p.maxTokens() + 3) / 4;
  }

  static InferenceRequest sampled(Prompt p, long seed) {
    return TestModels.request(p.text(), TextModels.MAX_TOKENS, (long) sampledTokens(p), TextModels.TEMPERATURE, 0.8,
        TextModels.TOP_P, 0.9, TextModels.SEED, seed, TextModels.IGNORE_EOS, true);
  }

  /**
   * Opens request {@code i} at step {@code prompts.get(i).joinStep()} and steps every open stream together each step
   * (as a worker does), until every stream has ended. The results in request order.
   */
  static List<Result> staggered(DecoderRunner runner, List<Prompt> prompts, List<InferenceRequest> requests) {
    List<Collected> all = new ArrayList<>();
    Collected[] byIndex = new Collected[requests.size()];
    int opened = 0;
    for (int step = 0; opened < requests.size() || all.stream().anyMatch(c -> !c.ended()); step++) {
      for (int i = 0; i < requests.size(); i++) {
        if (prompts.get(i).joinStep() == step) {
          byIndex[i] = TestModels.open(runner, requests.get(i));
          all.add(byIndex[i]);
          opened++;
        }
      }
      TestModels.step(runner, all);
      assertThat(step).as("steps").isLessThan(100_000);
    }
    return Arrays.stream(byIndex).map(Collected::result).toList();
  }

  /** Each stream's tokens are the plain loop's; the runner is empty afterwards. */
  static void assertExact(DecoderRunner runner, List<Prompt> prompts, List<Result> results) {
    for (int i = 0; i < prompts.size(); i++) {
      Prompt p = prompts.get(i);
      Result r = results.get(i);
      assertThat(r.promptTokens()).as("stream %d: prompt tokens of %s", i, p.text()).isEqualTo(p.ids().length);
      assertThat(r.tokens()).as("stream %d (%d prompt tokens, max_tokens %d, joined at step %d)", i, p.ids().length,
          p.maxTokens(), p.joinStep()).containsExactly(plain.greedy(p.ids(), p.maxTokens()));
      assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
      assertThat(r.text()).isEqualTo(tokenizer.decode(Arrays.stream(r.tokens()).asLongStream().toArray(), true));
    }
    DecoderStats after = runner.stats();
    assertThat(after.kvBlocksUsed()).isZero();
    assertThat(after.running() + after.waiting()).isZero();
  }

  static List<Result> runGreedy(Map<String, String> options, List<Prompt> prompts, DecoderStats[] statsOut) {
    try (DecoderRunner runner = TestModels.decoder(options)) {
      List<Result> results = staggered(runner, prompts, prompts.stream().map(ContinuousBatchingCorrectnessTest::greedy)
          .toList());
      assertExact(runner, prompts, results);
      statsOut[0] = runner.stats();
      System.out.printf("%s: %d streams, %d prompt + %d generated tokens, %d steps, %d model runs, %d preemptions,"
          + " %d prefix-cache hit tokens%n", options, prompts.size(), statsOut[0].promptTokens(),
          statsOut[0].generationTokens(), statsOut[0].steps(), statsOut[0].modelRuns(), statsOut[0].preemptions(),
          statsOut[0].prefixCacheHitTokens());
      return results;
    }
  }

  @Test
  void staggeredStreamsEqualThePlainLoop() {
    DecoderStats[] stats = new DecoderStats[1];
    runGreedy(Map.of("prefix_cache", "false"), prompts(1, List.of()), stats);
    assertThat(stats[0].preemptions()).isZero();
  }

  @Test
  void preemptedStreamsEqualThePlainLoop() {
    DecoderStats[] stats = new DecoderStats[1];
    // 256 tokens: 16 blocks for 64 streams of up to 120 + 24 tokens
    runGreedy(Map.of("prefix_cache", "false", "kv_cache_tokens", "256"), prompts(2, List.of()), stats);
    assertThat(stats[0].preemptions()).as("preemptions").isGreaterThan(0);
  }

  @Test
  void chunkedPrefillEqualsThePlainLoop() {
    DecoderStats[] stats = new DecoderStats[1];
    runGreedy(Map.of("prefix_cache", "false", "max_batched_tokens", "16"), prompts(3, List.of()), stats);
  }

  @Test
  void prefixCachedStreamsEqualThePlainLoop() {
    Random random = new Random(4);
    List<String> prefixes = List.of(words(random, "", 40), words(random, "", 70), words(random, "", 17));
    DecoderStats[] stats = new DecoderStats[1];
    runGreedy(Map.of("prefix_cache", "true"), prompts(4, prefixes), stats);
    assertThat(stats[0].prefixCacheHitTokens()).as("prefix cache hit tokens").isGreaterThan(0);
  }

  @Test
  void seededSamplingGivesTheSameTextAloneAndInTheBatch() {
    List<Prompt> prompts = prompts(5, List.of());
    List<InferenceRequest> requests = new ArrayList<>();
    for (int i = 0; i < prompts.size(); i++) {
      requests.add(sampled(prompts.get(i), 1000 + i));
    }
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      List<Result> batched = staggered(runner, prompts, requests);
      int differFromGreedy = 0;
      for (int i = 0; i < prompts.size(); i++) {
        Result alone = TestModels.runOne(runner, sampled(prompts.get(i), 1000 + i));
        assertThat(batched.get(i).tokens()).as("stream %d", i).containsExactly(alone.tokens());
        assertThat(batched.get(i).text()).as("stream %d", i).isEqualTo(alone.text());
        if (!Arrays.equals(alone.tokens(), plain.greedy(prompts.get(i).ids(), sampledTokens(prompts.get(i))))) {
          differFromGreedy++;
        }
      }
      assertThat(differFromGreedy).as("sampled streams that differ from greedy").isGreaterThan(STREAMS / 2);
      assertThat(runner.stats().kvBlocksUsed()).isZero();
    }
  }

  /**
   * Greedy decoding with ONNX Runtime alone: batch 1, the prompt in one call with an empty past, then one token a
   * call, each call's {@code present.*} fed back as {@code past_key_values.*}; argmax of the last position's logits.
   * Continuations are memoised by prompt (greedy is prefix-consistent: the longest asked for serves shorter ones).
   */
  static final class PlainGreedy implements AutoCloseable {
    private final OrtEnvironment env = OrtEnvironment.getEnvironment();
    private final OrtSession session;
    private final Map<String, int[]> memo = new HashMap<>();
    private final List<String> pastNames = new ArrayList<>();
    private final long heads;
    private final long headDim;

    PlainGreedy(Path model) throws OrtException {
      try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
        options.setIntraOpNumThreads(1);
        options.setInterOpNumThreads(1);
        session = env.createSession(model.toString(), options);
      }
      long h = -1;
      long d = -1;
      for (Map.Entry<String, NodeInfo> e : session.getInputInfo().entrySet()) {
        if (e.getKey().startsWith("past_key_values.")) {
          pastNames.add(e.getKey());
          long[] shape = ((TensorInfo) e.getValue().getInfo()).getShape();
          h = shape[1];
          d = shape[3];
        }
      }
      assertThat(session.getInputNames()).as("a plain past/present model").doesNotContain("use_cache_branch");
      assertThat(pastNames).isNotEmpty();
      heads = h;
      headDim = d;
    }

    int[] greedy(int[] prompt, int n) {
      String key = Arrays.toString(prompt);
      int[] known = memo.get(key);
      if (known == null || known.length < n) {
        known = compute(prompt, Math.max(n, MAX_NEW));
        memo.put(key, known);
      }
      return Arrays.copyOf(known, n);
    }

    private int[] compute(int[] prompt, int n) {
      Map<String, OnnxTensor> past = new HashMap<>();
      try {
        for (String name : pastNames) {
          past.put(name, OnnxTensor.createTensor(env, FloatBuffer.allocate(0), new long[] {1, heads, 0, headDim}));
        }
        int[] out = new int[n];
        int[] feed = prompt;
        int pastLength = 0;
        for (int t = 0; t < n; t++) {
          Map<String, OnnxTensor> in = new HashMap<>(past);
          long[] ids = Arrays.stream(feed).asLongStream().toArray();
          long[] mask = new long[pastLength + feed.length];
          Arrays.fill(mask, 1);
          long[] pos = new long[feed.length];
          for (int j = 0; j < pos.length; j++) {
            pos[j] = pastLength + j;
          }
          List<OnnxTensor> made = new ArrayList<>();
          made.add(OnnxTensor.createTensor(env, LongBuffer.wrap(ids), new long[] {1, ids.length}));
          in.put("input_ids", made.get(made.size() - 1));
          made.add(OnnxTensor.createTensor(env, LongBuffer.wrap(mask), new long[] {1, mask.length}));
          in.put("attention_mask", made.get(made.size() - 1));
          if (session.getInputNames().contains("position_ids")) {
            made.add(OnnxTensor.createTensor(env, LongBuffer.wrap(pos), new long[] {1, pos.length}));
            in.put("position_ids", made.get(made.size() - 1));
          }
          Map<String, OnnxTensor> next = new HashMap<>();
          try (OrtSession.Result r = session.run(in)) {
            OnnxTensor logits = (OnnxTensor) r.get("logits").orElseThrow();
            long[] shape = logits.getInfo().getShape();
            int vocab = (int) shape[2];
            FloatBuffer all = logits.getFloatBuffer();
            int base = (int) ((shape[1] - 1) * vocab);
            int best = 0;
            for (int v = 1; v < vocab; v++) {
              if (all.get(base + v) > all.get(base + best)) {
                best = v;
              }
            }
            out[t] = best;
            for (Map.Entry<String, OnnxValue> e : r) {
              if (e.getKey().startsWith("present.")) {
                OnnxTensor present = (OnnxTensor) e.getValue();
                next.put("past_key_values." + e.getKey().substring("present.".length()),
                    OnnxTensor.createTensor(env, present.getFloatBuffer(), present.getInfo().getShape()));
              }
            }
          } finally {
            made.forEach(OnnxTensor::close);
          }
          assertThat(next.keySet()).containsExactlyInAnyOrderElementsOf(pastNames);
          past.values().forEach(OnnxTensor::close);
          past = next;
          pastLength += feed.length;
          feed = new int[] {out[t]};
        }
        return out;
      } catch (OrtException e) {
        throw new AssertionError(e);
      } finally {
        past.values().forEach(OnnxTensor::close);
      }
    }

    @Override
    public void close() throws OrtException {
      session.close();
    }
  }
}
