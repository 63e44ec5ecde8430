package io.kiln.engines.llm.impl;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.TextModels;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A sentence encoder (all-MiniLM style: {@code input_ids}, {@code attention_mask}, optional {@code token_type_ids}
 * in; {@code last_hidden_state} or a pooled {@code sentence_embedding} out). One {@link #infer} tokenises every
 * text of the batch (truncated to the maximum length), pads them to the longest, runs the session once, pools each
 * text's token vectors (mean over its mask, or its first token) and L2-normalises them.
 *
 * <p><b>Threading:</b> not thread-safe (one worker thread), as {@link ModelRunner} says. <b>Errors:</b> a request
 * without UTF-8 {@code text_input} is INVALID_INPUT naming it; an ONNX Runtime failure is a
 * {@link ModelExecutionException}.
 */
public final class EncoderRunner implements ModelRunner {

  static final String ENGINE = "Encoder";
  private static final String TOKEN_TYPE_IDS = "token_type_ids";
  /** Float noise between a text's vector alone and padded (ONNX Runtime's kernels vary with shapes). */
  private static final double BATCH_TOLERANCE = 1e-5;

  private final ModelSpec spec;
  private final OrtEnvironment env;
  private final OrtSession session;
  private final TextTokenizer tokenizer;
  private final EncoderOptions options;
  private final String output;
  private final boolean pooled;
  private final boolean tokenTypes;
  private final int hidden;
  private final long fileBytes;
  private final List<String> outputs;
  /** Whether each text runs alone: the model's output for a text depends on the rest of its batch. */
  private boolean isolated;
  // Every batch runs through it; the session is closed only when none runs.
  private final io.kiln.pools.spi.EngineGuard guard;

  private EncoderRunner(ModelSpec spec, OrtSession session, TextTokenizer tokenizer, EncoderOptions options,
                        String output, boolean pooled, boolean tokenTypes, int hidden, long fileBytes) {
    this.spec = spec;
    this.env = OrtEnvironment.getEnvironment();
    this.session = session;
    this.tokenizer = tokenizer;
    this.options = options;
    this.output = output;
    this.pooled = pooled;
    this.tokenTypes = tokenTypes;
    this.hidden = hidden;
    this.fileBytes = fileBytes;
    this.outputs = spec.outputs().stream().map(TensorSpec::name).toList();
    this.guard = new io.kiln.pools.spi.EngineGuard("the encoder runner of " + spec.uri());
  }

  /**
   * Loads the encoder {@code spec} names. Blocking.
   *
   * @throws ModelLoadException naming the model and the cause, with everything it opened closed
   */
  public static EncoderRunner load(ModelSpec spec, List<Integer> gpus) {
    ModelFolder folder = ModelFolder.open(spec.uri(), ENGINE);
    EncoderOptions options;
    try {
      options = EncoderOptions.of(spec.options());
    } catch (IllegalArgumentException e) {
      throw new ModelLoadException("model " + spec.uri() + ": " + e.getMessage(), e);
    }
    int maxLength = maxLength(folder, options);
    TextTokenizer tokenizer = TextTokenizer.forEncoder(folder.tokenizerFile(), maxLength);
    OrtSession session = null;
    try {
      session = OrtSessions.open(spec, ENGINE, folder.modelFile(), gpus);
      Map<String, NodeInfo> in = session.getInputInfo();
      Map<String, NodeInfo> out = session.getOutputInfo();
      for (String name : in.keySet()) {
        if (!name.equals("input_ids") && !name.equals("attention_mask") && !name.equals(TOKEN_TYPE_IDS)) {
          throw new ModelLoadException("model " + spec.uri() + " takes an input '" + name + "' an encoder cannot"
              + " feed (it feeds input_ids, attention_mask, token_type_ids)");
        }
      }
      if (!in.containsKey("input_ids") || !in.containsKey("attention_mask")) {
        throw new ModelLoadException("model " + spec.uri() + " needs inputs input_ids and attention_mask, it has "
            + in.keySet());
      }
      String output = out.containsKey("last_hidden_state") ? "last_hidden_state"
          : out.containsKey("token_embeddings") ? "token_embeddings"
          : out.containsKey("sentence_embedding") ? "sentence_embedding" : null;
      if (output == null || !(out.get(output).getInfo() instanceof TensorInfo info)) {
        throw new ModelLoadException("model " + spec.uri() + " has no output last_hidden_state or"
            + " sentence_embedding (outputs: " + out.keySet() + ")");
      }
      long[] shape = info.getShape();
      boolean pooled = shape.length == 2;
      long h = shape[shape.length - 1];
      if (h <= 0) {
        h = folder.configInt("hidden_size", "dim", "d_model").orElseThrow(() -> new ModelLoadException("model "
            + spec.uri() + ": its output " + output + " leaves the hidden size symbolic and config.json has none"));
      }
      long bytes = java.nio.file.Files.size(folder.modelFile());
      EncoderRunner runner = new EncoderRunner(spec, session, tokenizer, options, output, pooled,
          in.containsKey(TOKEN_TYPE_IDS), (int) h, bytes);
      runner.isolated = !runner.batchIndependent();
      if (runner.isolated) {
        org.slf4j.LoggerFactory.getLogger(EncoderRunner.class).info("model {}: a text's embedding depends on the"
            + " other texts of its batch (dynamically quantised activations share one scale), so each text runs"
            + " alone", spec.uri());
      }
      return runner;
    } catch (OrtException | java.io.IOException e) {
      OrtSessions.closeQuietly(session);
      tokenizer.close();
      throw new ModelLoadException("model " + spec.uri() + ": cannot read it: " + e.getMessage(), e);
    } catch (RuntimeException | Error e) {
      OrtSessions.closeQuietly(session);
      tokenizer.close();
      throw e;
    }
  }

  /** The option, else sentence-transformers' {@code max_seq_length}, the tokenizer's limit or 256; within positions. */
  private static int maxLength(ModelFolder folder, EncoderOptions options) {
    int positions = folder.positions().orElse(Integer.MAX_VALUE);
    if (options.maxLength() > 0) {
      return Math.min(options.maxLength(), positions);
    }
    java.nio.file.Path st = folder.dir().resolve("sentence_bert_config.json");
    if (java.nio.file.Files.isRegularFile(st)) {
      try {
        int n = new com.fasterxml.jackson.databind.ObjectMapper().readTree(st.toFile()).path("max_seq_length").asInt();
        if (n > 0) {
          return Math.min(n, positions);
        }
      } catch (java.io.IOException e) {
        // fall back to the tokenizer's limit
      }
    }
    return Math.min(folder.modelMaxLength().orElse(256), positions);
  }

  @Override
  public ModelSpec spec() {
    return spec;
  }

  /** Kiln records the load info around this runner ({@link io.kiln.pools.spi.Engine.Loaded}). */
  @Override
  public ModelLoadInfo loadInfo() {
    throw new IllegalStateException("the Encoder engine's load info is recorded by Kiln's loader");
  }

  /**
   * Whether a text's embedding is the same alone and in a padded batch. A model with dynamically quantised
   * activations (all-MiniLM's quantised export) scales them over the whole batch, so its vectors would change with
   * what else a request is batched with: such a model runs each text alone instead.
   */
  private boolean batchIndependent() {
    String text = "The cat sits on the mat.";
    float[] alone = new float[hidden];
    float[] batched = new float[2 * hidden];
    embed(List.of(text), alone, new int[1]);
    embed(List.of(text, "A longer text to pad the batch with, about many things, which goes on for a while."),
        batched, new int[2]);
    for (int d = 0; d < hidden; d++) {
      if (Math.abs(alone[d] - batched[d]) > BATCH_TOLERANCE) {
        return false;
      }
    }
    return true;
  }

  /** Whether texts run one per ONNX Runtime call (see {@link #batchIndependent}). */
  boolean isolated() {
    return isolated;
  }

  /** Overrides the load-time probe, so tests reach the padded path with the one encoder they have. */
  void isolatedForTest(boolean isolated) {
    this.isolated = isolated;
  }

  /** The embedding's size. */
  public int dimension() {
    return hidden;
  }

  @Override
  public List<List<Tensor>> infer(List<InferenceRequest> batch) {
    return guard.run(() -> embed(batch));
  }

  private List<List<Tensor>> embed(List<InferenceRequest> batch) {
    if (batch.isEmpty()) {
      return List.of();
    }
    List<String> texts = new ArrayList<>();
    int[] rows = new int[batch.size()];
    List<List<String>> picked = new ArrayList<>(batch.size());
    for (int r = 0; r < batch.size(); r++) {
      List<String> t = Chunks.texts(batch.get(r));
      rows[r] = t.size();
      texts.addAll(t);
      picked.add(Chunks.picked(batch.get(r), outputs));
    }
    float[] vectors = new float[texts.size() * hidden];
    int[] lengths = new int[texts.size()];
    if (isolated) {
      for (int i = 0; i < texts.size(); i++) {
        float[] v = new float[hidden];
        int[] n = new int[1];
        embed(texts.subList(i, i + 1), v, n);
        System.arraycopy(v, 0, vectors, i * hidden, hidden);
        lengths[i] = n[0];
      }
    } else if (!texts.isEmpty()) {
      embed(texts, vectors, lengths);
    }
    List<List<Tensor>> results = new ArrayList<>(batch.size());
    int from = 0;
    for (int r = 0; r < batch.size(); r++) {
      List<Tensor> mine = new ArrayList<>();
      for (String o : picked.get(r)) {
        if (o.equals(TextModels.EMBEDDING)) {
          float[] v = java.util.Arrays.copyOfRange(vectors, from * hidden, (from + rows[r]) * hidden);
          mine.add(Tensor.ofFloats(o, new long[] {rows[r], hidden}, v));
        } else {
          mine.add(Chunks.int32(o, java.util.Arrays.copyOfRange(lengths, from, from + rows[r])));
        }
      }
      results.add(mine);
      from += rows[r];
    }
    return results;
  }

  private void embed(List<String> texts, float[] vectors, int[] lengths) {
    Encoding[] enc = tokenizer.encodeBatch(texts);
    int b = enc.length;
    int s = 1;
    for (int i = 0; i < b; i++) {
      lengths[i] = enc[i].getIds().length;
      s = Math.max(s, lengths[i]);
    }
    long[] ids = new long[b * s];
    long[] mask = new long[b * s];
    for (int i = 0; i < b; i++) {
      System.arraycopy(enc[i].getIds(), 0, ids, i * s, lengths[i]);
      java.util.Arrays.fill(mask, i * s, i * s + lengths[i], 1L);
    }
    long[] shape = {b, s};
    Map<String, OnnxTensor> in = new HashMap<>();
    try {
      in.put("input_ids", OnnxTensor.createTensor(env, LongBuffer.wrap(ids), shape));
      in.put("attention_mask", OnnxTensor.createTensor(env, LongBuffer.wrap(mask), shape));
      if (tokenTypes) {
        in.put(TOKEN_TYPE_IDS, OnnxTensor.createTensor(env, LongBuffer.wrap(new long[b * s]), shape));
      }
      try (OrtSession.Result result = session.run(in, java.util.Set.of(output))) {
        OnnxValue v = result.get(output).orElseThrow();
        FloatBuffer out = ((OnnxTensor) v).getFloatBuffer();
        for (int i = 0; i < b; i++) {
          pool(out, i, s, lengths[i], vectors, i * hidden);
        }
      }
    } catch (OrtException e) {
      throw new ModelExecutionException("ONNX Runtime failed an encoder batch of " + b + " texts: " + e.getMessage(),
          e);
    } finally {
      in.values().forEach(OnnxTensor::close);
    }
  }

  private void pool(FloatBuffer out, int row, int s, int length, float[] into, int at) {
    double[] sum = new double[hidden];
    if (pooled) {
      for (int d = 0; d < hidden; d++) {
        sum[d] = out.get(row * hidden + d);
      }
    } else {
      int tokens = options.pooling().equals(EncoderOptions.POOLING_CLS) ? 1 : length;
      for (int t = 0; t < tokens; t++) {
        int base = (row * s + t) * hidden;
        for (int d = 0; d < hidden; d++) {
          sum[d] += out.get(base + d);
        }
      }
      for (int d = 0; d < hidden; d++) {
        sum[d] /= Math.max(1, tokens);
      }
    }
    double norm = 0;
    for (double x : sum) {
      norm += x * x;
    }
    double scale = options.normalize() && norm > 0 ? 1 / Math.sqrt(norm) : 1;
    for (int d = 0; d < hidden; d++) {
      into[at + d] = (float) (sum[d] * scale);
    }
  }

  /** The model file's size: the weights the session holds (not ORT's arena). */
  @Override
  public OptionalLong memoryBytes() {
    return OptionalLong.of(fileBytes);
  }

  @Override
  public void close() {
    guard.close(() -> {
      OrtSessions.closeQuietly(session);
      tokenizer.close();
    });
  }
}
