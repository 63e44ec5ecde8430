package io.kiln.engines.builtin.impl;

import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@value BuiltinModels#CHUNKS}: a streaming model for tests, demos and benchmarks of the streaming path. It
 * answers a request with {@code chunks} chunks (request parameter, default {@value #DEFAULT_CHUNKS}, at most
 * {@value #MAX_CHUNKS}); chunk {@code i} holds every input plus {@code i} element by element (FP32, FP64,
 * INT32, INT64; other datatypes unchanged), so a client sending zeros reads the chunk's index from it and sees
 * the order. Before each chunk after the first it spends {@code delay_ms} (parameter, default 0, at most
 * {@value #MAX_DELAY_MILLIS}) as a model's step would. {@code fail_at} (parameter) makes chunk {@code k} fail
 * with an INTERNAL model error, as a generator that raised mid-stream; {@code crash_at} makes it fail the worker
 * ({@link ModelExecutionException}). Its outputs are declared as the identity's (one per input, same datatypes).
 * A worker's step over several of its streams is one batched call ({@link #next(List)}): one wait of the longest
 * {@code delay_ms}, then a chunk for each, as a model's forward pass over its batch.
 * {@link #infer} answers the first chunk (warm-up).
 */
final class ChunksRunner extends BuiltinModels.IdentityRunner implements StreamingModelRunner {

  static final int DEFAULT_CHUNKS = 4;
  static final int MAX_CHUNKS = 100_000;
  static final long MAX_DELAY_MILLIS = 10_000;

  ChunksRunner(ModelSpec spec, List<TensorSpec> outputs) {
    super(spec, outputs);
  }

  @Override
  public ChunkStream open(InferenceRequest request) {
    List<Tensor> inputs = streamInputs(request);
    Map<String, Object> p = request.parameters();
    return new Chunks(request, inputs, longParameter(p, "chunks", DEFAULT_CHUNKS, 0, MAX_CHUNKS),
        longParameter(p, "delay_ms", 0, 0, MAX_DELAY_MILLIS), longParameter(p, "fail_at", -1, -1, MAX_CHUNKS),
        longParameter(p, "crash_at", -1, -1, MAX_CHUNKS));
  }

  /**
   * One step over several streams as a batched model would take it: one wait of the longest {@code delay_ms} among
   * the streams past their first chunk (one forward pass for all), then every stream's chunk.
   */
  @Override
  public List<ChunkStep> next(List<ChunkStream> streams) {
    long delay = 0;
    for (ChunkStream s : streams) {
      if (s instanceof Chunks c && c.next > 0 && !c.over()) {
        delay = Math.max(delay, c.delay);
      }
    }
    pause(delay);
    List<ChunkStep> out = new ArrayList<>(streams.size());
    for (ChunkStream s : streams) {
      try {
        List<Tensor> chunk = s instanceof Chunks c ? c.produce() : s.next();
        out.add(chunk == null ? ChunkStep.END : ChunkStep.of(chunk));
      } catch (InferenceException e) {
        out.add(ChunkStep.failed(e));
      }
    }
    return out;
  }

  private static void pause(long millis) {
    if (millis <= 0) {
      return;
    }
    try {
      Thread.sleep(millis); // the model's own cost per step, as builtin:sleep's
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ModelExecutionException("interrupted", e);
    }
  }

  private final class Chunks implements ChunkStream {
    private final InferenceRequest request;
    private final List<Tensor> inputs;
    private final long chunks;
    private final long delay;
    private final long failAt;
    private final long crashAt;
    private long next;
    private boolean closed;

    Chunks(InferenceRequest request, List<Tensor> inputs, long chunks, long delay, long failAt, long crashAt) {
      this.request = request;
      this.inputs = inputs;
      this.chunks = chunks;
      this.delay = delay;
      this.failAt = failAt;
      this.crashAt = crashAt;
    }

    boolean over() {
      return closed || next >= chunks;
    }

    @Override
    public List<Tensor> next() {
      if (!over() && next > 0) {
        pause(delay);
      }
      return produce();
    }

    /** The next chunk without the step's wait. */
    List<Tensor> produce() {
      if (over()) {
        return null;
      }
      long i = next++;
      if (i == crashAt) {
        throw new ModelExecutionException("builtin:chunks crashed at chunk " + i + " (crash_at)");
      }
      if (i == failAt) {
        throw new InferenceException(InferenceException.Kind.INTERNAL, "builtin:chunks failed at chunk " + i
            + " (fail_at)");
      }
      List<Tensor> out = new ArrayList<>(inputs.size());
      for (Tensor t : inputs) {
        out.add(plus(t, i));
      }
      return chunkOutputs(request, out);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private static long longParameter(Map<String, Object> p, String name, long fallback, long min, long max) {
    Object v = p.get(name);
    if (v == null) {
      return fallback;
    }
    long n;
    if (v instanceof Number num && num.doubleValue() == Math.rint(num.doubleValue())) {
      n = num.longValue();
    } else if (v instanceof String s && s.matches("-?\\d{1,18}")) {
      n = Long.parseLong(s);
    } else {
      throw InferenceException.invalid("parameters." + name + ": must be a whole number, got " + v);
    }
    if (n < min || n > max) {
      throw InferenceException.invalid("parameters." + name + ": must be in " + min + ".." + max + ", got " + n);
    }
    return n;
  }

  private static Tensor plus(Tensor t, long add) {
    if (add == 0) {
      return t;
    }
    ByteBuffer in = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = ByteBuffer.allocate(t.data().length).order(ByteOrder.LITTLE_ENDIAN);
    switch (t.datatype()) {
      case FP32 -> {
        while (in.hasRemaining()) {
          out.putFloat(in.getFloat() + add);
        }
      }
      case FP64 -> {
        while (in.hasRemaining()) {
          out.putDouble(in.getDouble() + add);
        }
      }
      case INT32 -> {
        while (in.hasRemaining()) {
          out.putInt((int) (in.getInt() + add));
        }
      }
      case INT64 -> {
        while (in.hasRemaining()) {
          out.putLong(in.getLong() + add);
        }
      }
      default -> {
        return t;
      }
    }
    return new Tensor(t.name(), t.datatype(), t.shape(), out.array());
  }
}
