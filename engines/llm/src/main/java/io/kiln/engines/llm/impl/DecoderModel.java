package io.kiln.engines.llm.impl;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.kiln.pools.ModelExecutionException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A decoder's ONNX Runtime session fed from the paged KV cache. One {@link #forward} computes a step's work in as few
 * session runs as the graph allows (single-token rows in one run, longer prefill chunks in another; rows of different
 * lengths padded, the padding hidden by zeros in {@code attention_mask} and positioned explicitly) and scatters each
 * run's new keys and values into the rows' blocks. A graph whose logits are its rows' last positions only
 * ({@link DecoderSignature#lastLogitsOnly}) gets one logits row per row; Optimum's layout one per new position, of which
 * only each row's last real one is read. Inputs and outputs live in direct buffers kept across steps (the
 * outputs are ONNX Runtime's pinned outputs, written in place), so a step allocates no large arrays. Not thread-safe.
 */
final class DecoderModel implements AutoCloseable {

  /** Told of each computed row, with the logits of its last position when that is its sequence's last token. */
  interface LogitsSink {
    /** @param logits the row's last logits (the runner's scratch, valid during the call), or null mid-prompt */
    void accept(Scheduler.Work row, float[] logits);
  }

  /** Largest float buffer one run may need, so a huge step is split into runs instead of a huge allocation. */
  private static final long RUN_FLOATS = 1L << 24;

  private final OrtEnvironment env;
  private final OrtSession session;
  private final DecoderSignature sig;
  private final KvStore kv;
  private final float[] row;
  private final Map<String, ByteBuffer> buffers = new HashMap<>();
  private final int padToken;
  private int runs;
  private long runNanos;

  /** @param row where a row's logits are copied for the sink: the samplers' scratch */
  DecoderModel(OrtEnvironment env, OrtSession session, DecoderSignature sig, KvStore kv, int padToken, float[] row) {
    this.env = env;
    this.session = session;
    this.sig = sig;
    this.kv = kv;
    this.row = row;
    this.padToken = padToken;
  }

  DecoderSignature signature() {
    return sig;
  }

  /** Session runs so far. */
  int runs() {
    return runs;
  }

  /** Time spent inside ONNX Runtime's session runs so far. */
  long runNanos() {
    return runNanos;
  }

  void resetRuns() {
    runs = 0;
    runNanos = 0;
  }

  long kvBytes() {
    return kv.bytes();
  }

  /**
   * Computes {@code work} (each row: tokens {@code [start, start + count)} of its sequence, whose earlier positions
   * are cached), stores the new keys and values, and hands {@code sink} the logits of each row that reached its
   * sequence's last token.
   *
   * @throws ModelExecutionException when ONNX Runtime fails
   */
  void forward(List<Scheduler.Work> work, LogitsSink sink) {
    for (List<Scheduler.Work> run : plan(work)) {
      run(run, sink);
    }
  }

  private List<List<Scheduler.Work>> plan(List<Scheduler.Work> work) {
    Map<Long, List<Scheduler.Work>> groups = new LinkedHashMap<>();
    for (Scheduler.Work w : work) {
      // Padded runs: single tokens together, chunks together; else rows of one run must match exactly.
      long key = sig.pads() ? (w.count() == 1 ? 0 : 1) : ((long) w.start() << 32) | w.count();
      groups.computeIfAbsent(key, k -> new ArrayList<>()).add(w);
    }
    List<List<Scheduler.Work>> runs = new ArrayList<>();
    for (List<Scheduler.Work> g : groups.values()) {
      g.sort(Comparator.comparingInt(Scheduler.Work::start)); // similar lengths together: less padding
      List<Scheduler.Work> current = new ArrayList<>();
      int past = 0;
      int news = 0;
      for (Scheduler.Work w : g) {
        int p = Math.max(past, w.start());
        int s = Math.max(news, w.count());
        long rows = current.size() + 1;
        long need = Math.max(rows * sig.heads() * (p + s) * sig.headDim(), rows * logitRows(s) * sig.vocab());
        if (!current.isEmpty() && need > RUN_FLOATS) {
          runs.add(current);
          current = new ArrayList<>();
          p = w.start();
          s = w.count();
        }
        current.add(w);
        past = p;
        news = s;
      }
      runs.add(current);
    }
    return runs;
  }

  private void run(List<Scheduler.Work> rows, LogitsSink sink) {
    int b = rows.size();
    int past = 0;
    int news = 0;
    int[] start = new int[b];
    int[] count = new int[b];
    List<List<Integer>> tables = new ArrayList<>(b);
    for (int i = 0; i < b; i++) {
      Scheduler.Work w = rows.get(i);
      start[i] = w.start();
      count[i] = w.count();
      past = Math.max(past, start[i]);
      news = Math.max(news, count[i]);
      tables.add(w.seq().blocks);
    }
    int total = past + news;
    LongBuffer ids = longs("input_ids", b * news);
    LongBuffer mask = longs("attention_mask", b * total);
    LongBuffer pos = longs("position_ids", b * news);
    for (int i = 0; i < b; i++) {
      int[] tokens = rows.get(i).seq().tokens();
      for (int j = 0; j < news; j++) {
        boolean real = j < count[i];
        ids.put(i * news + j, real ? tokens[start[i] + j] : padToken);
        pos.put(i * news + j, real ? start[i] + j : 0);
        mask.put(i * total + past + j, real ? 1 : 0);
      }
      for (int p = 0; p < past; p++) {
        mask.put(i * total + p, p < start[i] ? 1 : 0);
      }
    }
    int kvHead = sig.heads() * sig.headDim();
    List<OnnxTensor> open = new ArrayList<>();
    try {
      Map<String, OnnxTensor> in = new HashMap<>();
      in.put(DecoderSignature.INPUT_IDS, track(open, OnnxTensor.createTensor(env, ids, new long[] {b, news})));
      if (sig.attentionMask()) {
        in.put(DecoderSignature.ATTENTION_MASK, track(open, OnnxTensor.createTensor(env, mask, new long[] {b, total})));
      }
      if (sig.positionIds()) {
        in.put(DecoderSignature.POSITION_IDS, track(open, OnnxTensor.createTensor(env, pos, new long[] {b, news})));
      }
      if (sig.useCacheBranch()) {
        in.put(DecoderSignature.USE_CACHE_BRANCH, track(open, OnnxTensor.createTensor(env, new boolean[] {true})));
      }
      Map<String, OnnxTensor> out = new HashMap<>();
      long[] pastShape = {b, sig.heads(), past, sig.headDim()};
      long[] presentShape = {b, sig.heads(), total, sig.headDim()};
      for (int l = 0; l < sig.layers(); l++) {
        for (boolean key : new boolean[] {true, false}) {
          FloatBuffer pastBuf = floats(DecoderSignature.past(l, key), b * past * kvHead);
          kv.gather(l, key, tables, start, past, pastBuf);
          in.put(DecoderSignature.past(l, key), track(open, OnnxTensor.createTensor(env, pastBuf, pastShape)));
          FloatBuffer present = floats(DecoderSignature.present(l, key), b * total * kvHead);
          out.put(DecoderSignature.present(l, key), track(open, OnnxTensor.createTensor(env, present, presentShape)));
        }
      }
      int logitRows = logitRows(news);
      FloatBuffer logits = floats(DecoderSignature.LOGITS, b * logitRows * sig.vocab());
      out.put(DecoderSignature.LOGITS, track(open, OnnxTensor.createTensor(env, logits,
          new long[] {b, logitRows, sig.vocab()})));
      long started = System.nanoTime();
      session.run(in, out).close(); // the pinned outputs are ours, not the result's
      runNanos += System.nanoTime() - started;
      runs++;
      for (int l = 0; l < sig.layers(); l++) {
        for (boolean key : new boolean[] {true, false}) {
          kv.scatter(l, key, tables, start, count, past, total, floats(DecoderSignature.present(l, key),
              b * total * kvHead));
        }
      }
      for (int i = 0; i < b; i++) {
        Scheduler.Work w = rows.get(i);
        if (w.start() + w.count() == w.seq().length()) {
          int at = sig.lastLogitsOnly() ? i : i * news + count[i] - 1;
          logits.get(at * sig.vocab(), row, 0, sig.vocab());
          sink.accept(w, row);
        } else {
          sink.accept(w, null);
        }
      }
    } catch (OrtException e) {
      throw new ModelExecutionException("ONNX Runtime failed a decoder step of " + b + " rows: " + e.getMessage(), e);
    } finally {
      open.forEach(OnnxTensor::close);
    }
  }

  /** Logits rows a run of {@code news} new positions per row gives for each row. */
  private int logitRows(int news) {
    return sig.lastLogitsOnly() ? 1 : news;
  }

  private static OnnxTensor track(List<OnnxTensor> open, OnnxTensor t) {
    open.add(t);
    return t;
  }

  private ByteBuffer bytes(String name, long n) {
    if (n > Integer.MAX_VALUE) {
      throw new ModelExecutionException("a decoder step needs a " + name + " buffer of " + n + " bytes");
    }
    ByteBuffer b = buffers.get(name);
    if (b == null || b.capacity() < n) {
      long grown = Math.max(n, b == null ? 0 : Math.min(Integer.MAX_VALUE, b.capacity() * 3L / 2));
      b = ByteBuffer.allocateDirect((int) grown).order(ByteOrder.nativeOrder());
      buffers.put(name, b);
    }
    return b;
  }

  private FloatBuffer floats(String name, int n) {
    FloatBuffer f = bytes(name, (long) n * Float.BYTES).asFloatBuffer();
    f.limit(n);
    return f;
  }

  private LongBuffer longs(String name, int n) {
    LongBuffer l = bytes(name, (long) n * Long.BYTES).asLongBuffer();
    l.limit(n);
    return l;
  }

  @Override
  public void close() {
    OrtSessions.closeQuietly(session);
    buffers.clear();
  }
}
