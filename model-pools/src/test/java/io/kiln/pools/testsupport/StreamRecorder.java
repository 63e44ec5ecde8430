package io.kiln.pools.testsupport;

import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/** A {@link ChunkListener} that records what it hears, readable from a test's thread. */
public final class StreamRecorder implements ChunkListener {

  public final List<InferenceResponse> chunks = new CopyOnWriteArrayList<>();
  public volatile Map<String, Object> end;
  public volatile Throwable error;
  private final Consumer<InferenceResponse> onChunk;

  public StreamRecorder() {
    this(c -> { });
  }

  /** @param onChunk runs on the stream's context after each chunk is recorded */
  public StreamRecorder(Consumer<InferenceResponse> onChunk) {
    this.onChunk = onChunk;
  }

  @Override
  public void chunk(InferenceResponse chunk) {
    if (end != null || error != null) {
      throw new AssertionError("chunk after the stream settled");
    }
    chunks.add(chunk);
    onChunk.accept(chunk);
  }

  @Override
  public void end(Map<String, Object> parameters) {
    settle();
    end = parameters;
  }

  @Override
  public void error(Throwable e) {
    settle();
    error = e;
  }

  private void settle() {
    if (end != null || error != null) {
      throw new AssertionError("settled twice");
    }
  }

  public boolean settled() {
    return end != null || error != null;
  }

  /** The first element of each chunk's first output, as floats: builtin:chunks fed zeros says the chunk index. */
  public List<Float> firsts() {
    return chunks.stream().map(c -> c.outputs().get(0).asFloats()[0]).toList();
  }
}
