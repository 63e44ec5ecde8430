package io.kiln.engines.llm.impl;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.kiln.pools.ModelLoadException;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The shape of a causal LM exported in Optimum's {@code text-generation-with-past} layout, read from its session:
 * {@code input_ids}, {@code attention_mask}, optional {@code position_ids}, {@code past_key_values.{i}.key/value}
 * {@code [batch, heads, past, headDim]} in, {@code logits} and {@code present.{i}.key/value} out. Dimensions the
 * graph leaves symbolic are taken from {@code config.json}.
 *
 * <p>Two logits layouts load: Optimum's, {@code [batch, sequence, vocab]} (every new position's logits), and
 * {@code [batch, 1, vocab]} with a static 1 (each row's logits at its last new position whose {@code attention_mask}
 * is 1; the LM head is skipped for the rest of a prefill chunk, which it would dominate). An input that selects the
 * positions ({@code logits_to_keep}, {@code num_logits_to_keep}) is not fed: it keeps the last positions of the padded
 * row, and this engine pads prefill chunks on the right.
 *
 * @param positionIds whether the graph takes explicit positions (without them, rows of one run must share their past
 *     length, since the model counts positions from it)
 * @param attentionMask whether the graph takes a mask (without one, rows cannot be padded)
 * @param useCacheBranch whether it is a merged decoder with a {@code use_cache_branch} switch
 * @param lastLogitsOnly whether {@code logits} is {@code [batch, 1, vocab]}: each row's last real position only
 */
record DecoderSignature(int layers, int heads, int headDim, int vocab, boolean positionIds, boolean attentionMask,
                        boolean useCacheBranch, boolean lastLogitsOnly) {

  static final String INPUT_IDS = "input_ids";
  static final String ATTENTION_MASK = "attention_mask";
  static final String POSITION_IDS = "position_ids";
  static final String USE_CACHE_BRANCH = "use_cache_branch";
  static final String LOGITS = "logits";
  private static final Pattern PAST = Pattern.compile("past_key_values\\.(\\d+)\\.(key|value)");

  static String past(int layer, boolean key) {
    return "past_key_values." + layer + (key ? ".key" : ".value");
  }

  static String present(int layer, boolean key) {
    return "present." + layer + (key ? ".key" : ".value");
  }

  /** Whether rows of different lengths can share a run (padded, masked, positioned explicitly). */
  boolean pads() {
    return positionIds && attentionMask;
  }

  /** @throws ModelLoadException saying what does not fit the layout */
  static DecoderSignature of(OrtSession session, ModelFolder folder, String uri) {
    try {
      Map<String, NodeInfo> in = session.getInputInfo();
      Map<String, NodeInfo> out = session.getOutputInfo();
      String what = "model " + uri + " is not a decoder exported with past key values (optimum-cli export onnx"
          + " --task text-generation-with-past): ";
      TreeSet<Integer> layers = new TreeSet<>();
      for (String name : in.keySet()) {
        Matcher m = PAST.matcher(name);
        if (m.matches()) {
          layers.add(Integer.parseInt(m.group(1)));
        } else if (!name.equals(INPUT_IDS) && !name.equals(ATTENTION_MASK) && !name.equals(POSITION_IDS)
            && !name.equals(USE_CACHE_BRANCH)) {
          throw new ModelLoadException(what + "it takes an input '" + name + "' this engine cannot feed (inputs: "
              + in.keySet() + ")");
        }
      }
      if (!in.containsKey(INPUT_IDS) || layers.isEmpty() || !out.containsKey(LOGITS)) {
        throw new ModelLoadException(what + "it needs inputs input_ids and past_key_values.{i}.key/value and output"
            + " logits; its inputs are " + in.keySet() + ", outputs " + out.keySet());
      }
      if (layers.first() != 0 || layers.last() != layers.size() - 1) {
        throw new ModelLoadException(what + "its past_key_values layers are not numbered 0.." + (layers.size() - 1));
      }
      TensorInfo key = tensor(in, past(0, true), what);
      if (key.type == OnnxJavaType.FLOAT16 || key.type == OnnxJavaType.BFLOAT16) {
        throw new ModelLoadException("model " + uri + " keeps its KV cache in " + key.type + "; this engine"
            + " supports float32 KV caches only (export with --dtype fp32)");
      }
      if (key.type != OnnxJavaType.FLOAT || key.getShape().length != 4) {
        throw new ModelLoadException(what + past(0, true) + " is " + key + ", expected float32 [batch, heads, past,"
            + " head_dim]");
      }
      for (int l = 0; l < layers.size(); l++) {
        for (boolean k : new boolean[] {true, false}) {
          tensor(in, past(l, k), what);
          tensor(out, present(l, k), what);
        }
      }
      TensorInfo logits = tensor(out, LOGITS, what);
      if (logits.type != OnnxJavaType.FLOAT || logits.getShape().length != 3) {
        throw new ModelLoadException(what + "logits is " + logits + ", expected float32 [batch, sequence, vocab]"
            + " or [batch, 1, vocab]");
      }
      long positions = logits.getShape()[1];
      if (positions > 1) {
        throw new ModelLoadException(what + "logits is " + logits + ": its second dimension is fixed at " + positions
            + "; expected a symbolic sequence length (every position) or 1 (the last position)");
      }
      long[] ks = key.getShape();
      int heads = dim(ks[1], folder.configInt("num_key_value_heads", "n_head", "num_attention_heads", "n_heads"),
          "heads", uri);
      OptionalInt explicitDim = folder.configInt("head_dim");
      OptionalInt hidden = folder.configInt("hidden_size", "n_embd", "d_model");
      OptionalInt attnHeads = folder.configInt("num_attention_heads", "n_head", "n_heads");
      OptionalInt derived = explicitDim.isPresent() ? explicitDim : hidden.isPresent() && attnHeads.isPresent()
          ? OptionalInt.of(hidden.getAsInt() / attnHeads.getAsInt()) : OptionalInt.empty();
      int headDim = dim(ks[3], derived, "head_dim", uri);
      int vocab = dim(logits.getShape()[2], folder.configInt("vocab_size"), "vocab_size", uri);
      return new DecoderSignature(layers.size(), heads, headDim, vocab, in.containsKey(POSITION_IDS),
          in.containsKey(ATTENTION_MASK), in.containsKey(USE_CACHE_BRANCH), positions == 1);
    } catch (OrtException e) {
      throw new ModelLoadException("model " + uri + ": cannot read its signature: " + e.getMessage(), e);
    }
  }

  private static TensorInfo tensor(Map<String, NodeInfo> nodes, String name, String what) {
    NodeInfo n = nodes.get(name);
    if (n == null || !(n.getInfo() instanceof TensorInfo t)) {
      throw new ModelLoadException(what + "it has no tensor '" + name + "'");
    }
    return t;
  }

  private static int dim(long fromGraph, OptionalInt fromConfig, String what, String uri) {
    if (fromGraph > 0) {
      return (int) fromGraph;
    }
    if (fromConfig.isPresent() && fromConfig.getAsInt() > 0) {
      return fromConfig.getAsInt();
    }
    throw new ModelLoadException("model " + uri + ": its graph leaves " + what + " symbolic and its config.json does"
        + " not say it");
  }
}
