package io.kiln.gateway.support;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.TextModels;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The models the test cluster serves, and their deterministic computation: output j is input j (by the
 * model's declared order), doubled for FP32 and unchanged for every other type; the text models ({@link #text()})
 * answer as their contract says, deterministically ({@link #textChunks}, and the encoder's vectors).
 */
public final class TestModels {

  /** {@code mlp}: FP32 [-1, 4] → FP32 [-1, 4], max batch 8, versions 1 and 2 (2 serves). */
  public static final String MLP = "mlp";
  /** {@code pair}: INT32 [-1, 2] and BYTES [-1] → their copies {@code a_out}, {@code b_out}. */
  public static final String PAIR = "pair";
  /** {@code cold}: declared but not ready. */
  public static final String COLD = "cold";
  /** {@code orphan}: ready but no node hosts it. */
  public static final String ORPHAN = "orphan";
  /** {@code llm}: keeps the text generation contract ({@link TextModels#generation()}); see {@link #textChunks}. */
  public static final String LLM = "llm";
  /** {@code encoder}: keeps the embedding contract with vectors of {@value #ENCODER_DIMENSIONS}; max batch 4. */
  public static final String ENCODER = "encoder";
  public static final int ENCODER_DIMENSIONS = 3;
  /**
   * {@code vad}: {@code audio} FP32 [-1, 4] and the scalars (shape []) {@code sr} INT64 and {@code tag} BYTES →
   * {@code audio_out}, {@code sr_out}, {@code tag_out}, their copies (audio doubled); max batch 1. In
   * {@link #scalars()}, not {@link #all()}.
   */
  public static final String SCALARS = "vad";
  /** What {@link #LLM} answers unless a test says otherwise: one chunk per piece, each a token. */
  public static final List<String> REPLY = List.of("Hello", "", ",", " world", "!");

  private TestModels() {
  }

  /** {@code id_<TYPE>}: one input {@code x} of that type, shape [-1], one output {@code y}. */
  public static String identity(DataType t) {
    return "id_" + t.name();
  }

  public static List<ModelInfo> all() {
    List<ModelInfo> models = new ArrayList<>();
    models.add(mlp("1"));
    models.add(mlp("2"));
    models.add(new ModelInfo(PAIR, "1", List.of("1"), "pytorch_torchscript",
        signature(List.of(spec("a", DataType.INT32, -1, 2), spec("b", DataType.BYTES, -1)),
            List.of(spec("a_out", DataType.INT32, -1, 2), spec("b_out", DataType.BYTES, -1))), true, 0));
    models.add(new ModelInfo(COLD, "1", List.of("1"), "pytorch_torchscript",
        signature(List.of(spec("x", DataType.FP32, -1)), List.of(spec("y", DataType.FP32, -1))), false, 0));
    models.add(new ModelInfo(ORPHAN, "1", List.of("1"), "pytorch_torchscript",
        signature(List.of(spec("x", DataType.FP32, -1)), List.of(spec("y", DataType.FP32, -1))), true, 0));
    for (DataType t : DataType.values()) {
      models.add(new ModelInfo(identity(t), "1", List.of("1"), "pytorch_torchscript",
          signature(List.of(spec("x", t, -1)), List.of(spec("y", t, -1))), true, 0));
    }
    return models;
  }

  /**
   * The text models ({@link #LLM}, {@link #ENCODER}), which {@link #all()} leaves out so that the tests counting
   * models are not concerned; a test class adds them with {@link FakeCluster#addModel}.
   */
  public static List<ModelInfo> text() {
    ModelSignature encoder = new ModelSignature(List.of(spec(TextModels.TEXT_INPUT, DataType.BYTES, -1)),
        List.of(spec(TextModels.EMBEDDING, DataType.FP32, -1, ENCODER_DIMENSIONS),
            spec(TextModels.PROMPT_TOKENS, DataType.INT32, -1)), false);
    return List.of(new ModelInfo(LLM, "1", List.of("1"), "kiln_llm", TextModels.generation(), true, 8),
        new ModelInfo(ENCODER, "1", List.of("1"), "kiln_llm", encoder, true, 4));
  }

  /** The model with scalar inputs and outputs ({@link #SCALARS}), which {@link #all()} leaves out as it does text's. */
  public static List<ModelInfo> scalars() {
    return List.of(new ModelInfo(SCALARS, "1", List.of("1"), "onnxruntime_onnx",
        signature(List.of(spec("audio", DataType.FP32, -1, 4), spec("sr", DataType.INT64), spec("tag", DataType.BYTES)),
            List.of(spec("audio_out", DataType.FP32, -1, 4), spec("sr_out", DataType.INT64),
                spec("tag_out", DataType.BYTES))), true, 1));
  }

  private static ModelInfo mlp(String version) {
    return new ModelInfo(MLP, version, List.of("1", "2"), "pytorch_torchscript",
        signature(List.of(spec("input", DataType.FP32, -1, 4)), List.of(spec("output", DataType.FP32, -1, 4))), true, 8);
  }

  public static ModelSignature signature(List<TensorSpec> inputs, List<TensorSpec> outputs) {
    return new ModelSignature(inputs, outputs);
  }

  public static TensorSpec spec(String name, DataType type, long... shape) {
    return new TensorSpec(name, type, shape);
  }

  /** Runs a model on a request, as a pool on {@code node} would. */
  public static InferenceResponse compute(ModelInfo model, InferenceRequest request, String node) {
    if (TextModels.embeds(model.signature())) {
      return embed(model, request, node);
    }
    List<Tensor> outputs = new ArrayList<>();
    for (int j = 0; j < model.outputs().size(); j++) {
      String outName = model.outputs().get(j).name();
      if (!request.outputs().isEmpty() && !request.outputs().contains(outName)) {
        continue;
      }
      String inName = model.inputs().get(j).name();
      Tensor in = request.inputs().stream().filter(t -> t.name().equals(inName)).findFirst().orElseThrow();
      outputs.add(new Tensor(outName, in.datatype(), in.shape(), transform(in)));
    }
    return new InferenceResponse(request.id(), model.name(), model.version(), outputs, Map.of("kiln_node", node));
  }

  private static byte[] transform(Tensor in) {
    if (in.datatype() != DataType.FP32) {
      return in.data().clone();
    }
    float[] v = in.asFloats();
    ByteBuffer out = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : v) {
      out.putFloat(2 * f);
    }
    return out.array();
  }

  /** How many tokens the fake text models count in a text: its words. */
  public static int tokens(String text) {
    String t = text.strip();
    return t.isEmpty() ? 0 : t.split("\\s+").length;
  }

  /**
   * The chunks a generation model answers with under the contract: one per piece of {@code reply} (each one token),
   * then an empty one with finish reason {@code stop}; with parameter {@code max_tokens} below the pieces, the chunk
   * of the last token allowed carries {@code length} and ends it. Usage so far in every chunk.
   */
  public static List<InferenceResponse> textChunks(ModelInfo model, InferenceRequest request, String node,
                                                   List<String> reply) {
    String prompt = new String(request.inputs().get(0).byteElements().get(0), StandardCharsets.UTF_8);
    Object max = request.parameters().get(TextModels.MAX_TOKENS);
    long limit = max instanceof Number n ? n.longValue() : Long.MAX_VALUE;
    List<InferenceResponse> chunks = new ArrayList<>();
    int prompted = tokens(prompt);
    for (int i = 0; i < reply.size(); i++) {
      boolean last = i + 1 == limit && i + 1 < reply.size();
      chunks.add(chunk(model, request, node, reply.get(i), last ? TextModels.FINISH_LENGTH : "", prompted, i + 1));
      if (last) {
        return chunks;
      }
    }
    chunks.add(chunk(model, request, node, "", TextModels.FINISH_STOP, prompted, reply.size()));
    return chunks;
  }

  private static InferenceResponse chunk(ModelInfo model, InferenceRequest request, String node, String text,
                                         String finish, int prompt, int completion) {
    List<Tensor> outputs = List.of(
        Tensor.ofBytes(TextModels.TEXT_OUTPUT, new long[] {1}, List.of(text.getBytes(StandardCharsets.UTF_8))),
        Tensor.ofBytes(TextModels.FINISH_REASON, new long[] {1}, List.of(finish.getBytes(StandardCharsets.UTF_8))),
        ints(TextModels.PROMPT_TOKENS, prompt), ints(TextModels.COMPLETION_TOKENS, completion));
    return new InferenceResponse(request.id(), model.name(), model.version(), outputs, Map.of("kiln_node", node));
  }

  /**
   * An encoder's answer: the vector of row i is {@code [0.5, -0.25, length of text i]} (exact in FP32, so the
   * tests can compare bytes), its prompt tokens the text's words.
   */
  private static InferenceResponse embed(ModelInfo model, InferenceRequest request, String node) {
    List<byte[]> texts = request.inputs().get(0).byteElements();
    int dims = ENCODER_DIMENSIONS;
    float[] vectors = new float[texts.size() * dims];
    int[] tokens = new int[texts.size()];
    for (int i = 0; i < texts.size(); i++) {
      String text = new String(texts.get(i), StandardCharsets.UTF_8);
      vectors[i * dims] = 0.5f;
      vectors[i * dims + 1] = -0.25f;
      vectors[i * dims + 2] = text.length();
      tokens[i] = tokens(text);
    }
    ByteBuffer counts = ByteBuffer.allocate(tokens.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    counts.asIntBuffer().put(tokens);
    return new InferenceResponse(request.id(), model.name(), model.version(), List.of(
        Tensor.ofFloats(TextModels.EMBEDDING, new long[] {texts.size(), dims}, vectors),
        new Tensor(TextModels.PROMPT_TOKENS, DataType.INT32, new long[] {texts.size()}, counts.array())),
        Map.of("kiln_node", node));
  }

  private static Tensor ints(String name, int value) {
    return new Tensor(name, DataType.INT32, new long[] {1},
        ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(value).array());
  }
}
