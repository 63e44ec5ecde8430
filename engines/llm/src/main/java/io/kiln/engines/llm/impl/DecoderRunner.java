package io.kiln.engines.llm.impl;

import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A causal LM served with continuous batching: each {@link #next(List)} is one engine step over the streams given
 * (the {@link Scheduler} picks the work, {@link DecoderModel} computes it against the paged KV cache, each sequence
 * that reached its last token samples the next one). Streams join at any step and leave as soon as they finish or
 * are closed, their KV blocks freed at once. A stream gets {@link ChunkStep#PENDING} in a step that gave it no
 * token (its prompt is part-way through a chunked prefill, or it waits for KV blocks). A stream's last chunk carries
 * its finish reason; the next step it is given answers {@link ChunkStep#END} for it at once: a step in which any
 * stream ends runs no model (the others get {@code PENDING} and move in the caller's next step, as a worker calls
 * again at once), so an end never waits for a forward pass.
 *
 * <p><b>Threading:</b> not thread-safe; one worker thread owns the runner and its streams, as {@link
 * StreamingModelRunner} says. <b>Errors:</b> a request that cannot run (bad parameters, a prompt longer than the
 * context) fails {@link #open} with INVALID_INPUT naming the parameter; an ONNX Runtime failure is a
 * {@link io.kiln.pools.ModelExecutionException} (the worker failed).
 */
public final class DecoderRunner implements StreamingModelRunner {

  /** Tokens generated when a request does not limit them (and the context leaves room). */
  public static final int DEFAULT_MAX_TOKENS = 256;
  /** Prompt tokens the detokeniser starts from, so that the first generated token decodes in context. */
  private static final int PROMPT_TAIL = 6;

  private final ModelSpec spec;
  private final DecoderParts parts;
  private final DecoderModel model;
  private final BlockPool pool;
  private final Scheduler scheduler;
  private final Sampler.Scratch scratch;
  private final List<String> outputs;
  private long nextId;
  private long promptTokens;
  private long generationTokens;
  private long steps;
  // Every open, step and warm-up call runs through it; the session is closed only when none runs.
  private final io.kiln.pools.spi.EngineGuard guard;
  /** The counters as of the last step, for meters read off the worker's thread: replaced whole, never mutated. */
  private volatile DecoderStats published;
  private DecoderMeters meters;

  DecoderRunner(ModelSpec spec, DecoderParts parts, DecoderModel model, BlockPool pool, Scheduler scheduler,
                Sampler.Scratch scratch) {
    this.spec = spec;
    this.parts = parts;
    this.model = model;
    this.pool = pool;
    this.scheduler = scheduler;
    this.scratch = scratch;
    this.outputs = spec.outputs().stream().map(TensorSpec::name).toList();
    this.guard = new io.kiln.pools.spi.EngineGuard("the decoder runner of " + spec.uri());
  }

  @Override
  public ModelSpec spec() {
    return spec;
  }

  /** Kiln records the load info around this runner ({@link io.kiln.pools.spi.Engine.Loaded}). */
  @Override
  public ModelLoadInfo loadInfo() {
    throw new IllegalStateException("the Decoder engine's load info is recorded by Kiln's loader");
  }

  /** The longest sequence (prompt and completion) this runner serves. */
  public int contextLength() {
    return parts.context();
  }

  @Override
  public DecoderStream open(InferenceRequest request) {
    return guard.run(() -> openStream(request));
  }

  private DecoderStream openStream(InferenceRequest request) {
    List<String> texts = Chunks.texts(request);
    if (texts.size() != 1) {
      throw InferenceException.invalid(TextModels.TEXT_INPUT + ": takes one prompt per request, got " + texts.size());
    }
    GenerationParams p = GenerationParams.of(request.parameters());
    List<String> picked = Chunks.picked(request, outputs);
    String prompt = texts.get(0);
    if (p.chat()) {
      ChatTemplate chat = parts.chat().orElseThrow(() -> InferenceException.invalid(TextModels.INPUT_FORMAT
          + ": this model has no chat template (tokenizer_config.json declares no chat_template); send "
          + TextModels.FORMAT_TEXT));
      prompt = chat.render(prompt);
    }
    // A text prompt gets the special tokens the tokenizer adds (Llama's BOS; none for GPT-2); a chat template
    // writes its own.
    int[] ids = parts.tokenizer().encode(prompt, !p.chat());
    if (ids.length == 0) {
      if (parts.bos().isEmpty()) {
        throw InferenceException.invalid(TextModels.TEXT_INPUT + ": the prompt is empty and the model declares no"
            + " beginning-of-sequence token to start from");
      }
      ids = new int[] {parts.bos().getAsInt()};
    }
    int context = parts.context();
    if (ids.length >= context) {
      throw InferenceException.invalid(TextModels.TEXT_INPUT + ": the prompt has " + ids.length + " tokens; this"
          + " model's context (max_model_len, KV cache) holds " + context + ", so a prompt may have at most "
          + (context - 1) + " to leave room for " + TextModels.MAX_TOKENS + " >= 1");
    }
    int room = context - ids.length;
    if (p.maxTokens().isPresent() && p.maxTokens().getAsInt() > room) { // as OpenAI's servers: asked, not clipped
      throw InferenceException.invalid(TextModels.MAX_TOKENS + ": " + p.maxTokens().getAsInt() + " tokens after a "
          + ids.length + "-token prompt exceed this model's context of " + context + " (at most " + room + ")");
    }
    int maxTokens = Math.min(room, p.maxTokens().orElse(DEFAULT_MAX_TOKENS)); // unasked: the rest of the context
    long seed = p.seed().orElseGet(() -> ThreadLocalRandom.current().nextLong());
    Sampler sampler = new Sampler(p.temperature(), p.topP(), p.topK(), seed);
    TextStream text = new TextStream(parts.tokenizer(), p.stop(),
        Arrays.copyOfRange(ids, Math.max(0, ids.length - PROMPT_TAIL), ids.length));
    Sequence s = new Sequence(nextId++, ids, maxTokens, p, sampler, text);
    scheduler.add(s);
    promptTokens += ids.length;
    return new DecoderStream(this, s, picked);
  }

  /** One engine step over {@code streams} (streams this runner opened); see the class comment. */
  @Override
  public List<ChunkStep> next(List<ChunkStream> streams) {
    return guard.run(() -> step(streams));
  }

  private List<ChunkStep> step(List<ChunkStream> streams) {
    ChunkStep[] out = new ChunkStep[streams.size()];
    Map<Sequence, Integer> index = new IdentityHashMap<>();
    List<Sequence> active = new ArrayList<>(streams.size());
    boolean ending = false;
    for (int i = 0; i < streams.size(); i++) {
      if (!(streams.get(i) instanceof DecoderStream d)) {
        throw new IllegalArgumentException("stream " + i + " was not opened by this runner");
      }
      if (d.closed() || d.lastProduced) {
        out[i] = ChunkStep.END;
        ending = true;
      } else {
        active.add(d.seq);
        index.put(d.seq, i);
      }
    }
    // A step that ends streams computes nothing: their ends then leave right after the step that produced their last
    // chunk, not after another model step (a full forward at 16 streams), and the worker steps the others at once.
    if (!active.isEmpty() && !ending) {
      List<Scheduler.Work> work = scheduler.schedule(active);
      if (!work.isEmpty()) {
        steps++;
        model.forward(work, (w, logits) -> {
          scheduler.computed(w);
          if (logits != null) {
            int i = index.get(w.seq());
            out[i] = ChunkStep.of(produce((DecoderStream) streams.get(i)));
          }
        });
      }
    }
    for (int i = 0; i < out.length; i++) {
      if (out[i] == null) {
        out[i] = ChunkStep.PENDING;
      }
    }
    published = stats();
    return Arrays.asList(out);
  }

  /** Samples the stream's next token (its logits are in the scratch) and turns it into the stream's chunk. */
  private List<Tensor> produce(DecoderStream d) {
    Sequence s = d.seq;
    int token = s.sampler.sample(scratch);
    s.append(token);
    generationTokens++;
    String delta;
    String finish = "";
    if (!s.params.ignoreEos() && parts.eos().contains(token)) {
      delta = s.text.finish().delta(); // the end-of-sequence token itself is not text
      finish = TextModels.FINISH_STOP;
    } else {
      TextStream.Step step = s.text.add(token);
      delta = step.delta();
      if (step.stopped()) {
        finish = TextModels.FINISH_STOP;
      } else if (s.generated() >= s.maxTokens) {
        TextStream.Step rest = s.text.finish();
        delta += rest.delta();
        finish = rest.stopped() ? TextModels.FINISH_STOP : TextModels.FINISH_LENGTH;
      }
    }
    if (!finish.isEmpty()) {
      s.finishReason = finish;
      d.lastProduced = true;
      scheduler.remove(s);
    }
    return d.chunk(delta, finish);
  }

  void release(DecoderStream d) {
    if (!guard.closed()) {
      scheduler.remove(d.seq);
      published = stats();
    }
  }

  /**
   * The first chunk of each request (Kiln's warm-up): each is opened, stepped together with the others until it has
   * produced a token, and closed.
   */
  @Override
  public List<List<Tensor>> infer(List<InferenceRequest> batch) {
    return guard.run(() -> warm(batch));
  }

  private List<List<Tensor>> warm(List<InferenceRequest> batch) {
    List<DecoderStream> streams = new ArrayList<>(batch.size());
    try {
      for (InferenceRequest r : batch) {
        streams.add(open(r));
      }
      List<List<Tensor>> first = new ArrayList<>(java.util.Collections.nCopies(batch.size(), null));
      List<Integer> missing = new ArrayList<>();
      for (int i = 0; i < batch.size(); i++) {
        missing.add(i);
      }
      while (!missing.isEmpty()) {
        List<ChunkStream> step = new ArrayList<>(missing.size());
        missing.forEach(i -> step.add(streams.get(i)));
        List<ChunkStep> got = next(step);
        for (int k = got.size() - 1; k >= 0; k--) {
          if (!got.get(k).pending()) {
            first.set(missing.get(k), got.get(k).chunk() == null ? List.of() : got.get(k).chunk());
            missing.remove(k);
          }
        }
      }
      return first;
    } finally {
      streams.forEach(DecoderStream::close);
    }
  }

  /** The runner's counters now; cheap, but like every method to be called on the worker's thread. */
  public DecoderStats stats() {
    return new DecoderStats(scheduler.running(), scheduler.waiting(), pool.used(), pool.total(), pool.cachedBlocks(),
        parts.blockSize(), scheduler.prefixHitTokens(), scheduler.prefixLookupTokens(), scheduler.preemptions(),
        promptTokens, generationTokens, steps, model.runs(), scheduler.prefillOnlySteps());
  }

  /** Time spent inside ONNX Runtime so far (the rest of a step is Java: scheduling, KV copies, sampling, text). */
  long modelRunNanos() {
    return model.runNanos();
  }

  void resetCounters() {
    promptTokens = 0;
    generationTokens = 0;
    steps = 0;
    model.resetRuns();
    scheduler.resetCounters();
    published = stats();
  }

  /**
   * Registers gauges of the sequences and KV blocks and counters of tokens, prefix-cache hits and preemptions
   * ({@code kiln.decoder.*}) under {@code tags}; they are removed when the runner closes.
   */
  @Override
  public void bindMeters(io.micrometer.core.instrument.MeterRegistry registry,
                         io.micrometer.core.instrument.Tags tags) {
    if (meters == null && !guard.closed()) {
      meters = new DecoderMeters(registry, tags, () -> published);
    }
  }

  /** The model file's size plus the KV cache's: the weights and cache this runner holds (not ORT's arena). */
  @Override
  public OptionalLong memoryBytes() {
    return OptionalLong.of(parts.fileBytes() + model.kvBytes());
  }

  @Override
  public void close() {
    guard.close(() -> {
      if (meters != null) {
        meters.remove();
      }
      model.close();
      parts.tokenizer().close();
    });
  }

  /** What a runner needs besides its scheduling state, read at load. */
  record DecoderParts(TextTokenizer tokenizer, Optional<ChatTemplate> chat, Set<Integer> eos,
                      java.util.OptionalInt bos, int context, int blockSize, long fileBytes) {
  }
}
