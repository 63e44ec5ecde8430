package io.kiln.engines.llm.impl;

import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.List;

/**
 * One generation request of a {@link DecoderRunner}. {@link #next()} steps the runner for this stream alone until it
 * has a chunk; a worker steps all its streams together through {@link DecoderRunner#next(List)} instead.
 * {@link #close()} frees the sequence's KV blocks at once. Not thread-safe: the runner's worker thread uses it.
 */
public final class DecoderStream implements ChunkStream {

  private final DecoderRunner runner;
  final Sequence seq;
  private final List<String> outputs;
  /** The chunk carrying the finish reason was produced: the next step is the end. */
  boolean lastProduced;
  private boolean closed;

  DecoderStream(DecoderRunner runner, Sequence seq, List<String> outputs) {
    this.runner = runner;
    this.seq = seq;
    this.outputs = outputs;
  }

  /**
   * Steps the runner for this stream alone until it has a chunk.
   *
   * @return the next chunk, or null once the answer is complete
   * @throws io.kiln.pools.InferenceException UNAVAILABLE when the stream cannot move at all (a guard: the scheduler
   *     preempts streams that are not stepped when they hold the blocks this one waits for)
   */
  @Override
  public List<Tensor> next() {
    while (true) {
      Sequence.State state = seq.state;
      int computed = seq.computed;
      ChunkStep step = runner.next(List.of(this)).get(0);
      if (step.failure() != null) {
        throw step.failure();
      }
      if (step.over()) {
        return null;
      }
      if (!step.pending()) {
        return step.chunk();
      }
      if (seq.state == state && seq.computed == computed) { // nobody else steps the streams that hold the blocks
        throw io.kiln.pools.InferenceException.unavailable("the KV cache is held by other open streams of this"
            + " runner; step them together");
      }
    }
  }

  /** Prompt tokens the prefix cache held when this sequence was first admitted (0 before that). */
  public int cachedPromptTokens() {
    return seq.cachedPromptTokens;
  }

  /** The tokens generated so far (an end-of-sequence token included). */
  public int[] generatedTokens() {
    return java.util.Arrays.copyOfRange(seq.tokens(), seq.promptTokens, seq.length());
  }

  boolean closed() {
    return closed;
  }

  List<Tensor> chunk(String text, String finishReason) {
    List<Tensor> chunk = new ArrayList<>(outputs.size());
    for (String o : outputs) {
      chunk.add(switch (o) {
        case TextModels.TEXT_OUTPUT -> Chunks.text(o, text);
        case TextModels.FINISH_REASON -> Chunks.text(o, finishReason);
        case TextModels.PROMPT_TOKENS -> Chunks.int32(o, new int[] {seq.promptTokens});
        case TextModels.COMPLETION_TOKENS -> Chunks.int32(o, new int[] {seq.generated()});
        default -> throw new IllegalStateException("unknown output " + o);
      });
    }
    return chunk;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      runner.release(this);
    }
  }
}
