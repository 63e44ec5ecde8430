package io.kiln.gateway.support;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The models the test cluster serves, and their deterministic computation: output j is input j (by the
 * model's declared order), doubled for FP32 and unchanged for every other type.
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
}
