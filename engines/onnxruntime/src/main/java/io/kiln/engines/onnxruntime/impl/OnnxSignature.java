package io.kiln.engines.onnxruntime.impl;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.TensorInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.SpecMismatchException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An ONNX model's own signature against the spec's: the datatypes ONNX Runtime's Java API can carry, and the
 * load-time check that a deployment declares what the model really takes and gives.
 */
final class OnnxSignature {

  private OnnxSignature() {
  }

  /**
   * The ONNX Runtime type of a Kiln datatype, or empty where its Java API carries none (UINT16..64). BYTES is
   * ONNX's string tensor: its elements cross as Java strings, decoded and encoded UTF-8.
   */
  static Optional<OnnxJavaType> toOnnx(DataType t) {
    return Optional.ofNullable(switch (t) {
      case BOOL -> OnnxJavaType.BOOL;
      case UINT8 -> OnnxJavaType.UINT8;
      case INT8 -> OnnxJavaType.INT8;
      case INT16 -> OnnxJavaType.INT16;
      case INT32 -> OnnxJavaType.INT32;
      case INT64 -> OnnxJavaType.INT64;
      case FP16 -> OnnxJavaType.FLOAT16;
      case BF16 -> OnnxJavaType.BFLOAT16;
      case FP32 -> OnnxJavaType.FLOAT;
      case FP64 -> OnnxJavaType.DOUBLE;
      case BYTES -> OnnxJavaType.STRING;
      default -> null;
    });
  }

  static OnnxJavaType javaType(DataType t) {
    return toOnnx(t).orElseThrow(() -> new ModelExecutionException(t + " tensors cannot be passed to ONNX Runtime"));
  }

  static DataType kilnType(OnnxJavaType t, TensorSpec declared) {
    if (toOnnx(declared.datatype()).orElse(null) != t) {
      throw new SpecMismatchException("output '" + declared.name() + "' came back as " + t + ", the spec declares "
          + declared.datatype());
    }
    return declared.datatype();
  }

  /**
   * Every input the model has is declared, and every declared input and output matches the model's.
   *
   * @throws ModelLoadException listing every mismatch, each naming the tensor
   */
  static void check(ModelSpec spec, Map<String, NodeInfo> modelInputs, Map<String, NodeInfo> modelOutputs) {
    List<String> problems = new ArrayList<>();
    for (TensorSpec s : spec.inputs()) {
      compare("input", s, modelInputs.get(s.name()), modelInputs, problems);
    }
    for (String name : modelInputs.keySet()) {
      if (spec.inputs().stream().noneMatch(s -> s.name().equals(name))) {
        problems.add("the model takes input '" + name + "' (" + describe(modelInputs.get(name)) + "), which the spec"
            + " does not declare");
      }
    }
    for (TensorSpec s : spec.outputs()) {
      compare("output", s, modelOutputs.get(s.name()), modelOutputs, problems);
    }
    if (!problems.isEmpty()) {
      throw new ModelLoadException("model " + spec.uri() + " does not match its spec: " + String.join("; ", problems));
    }
  }

  private static void compare(String kind, TensorSpec declared, NodeInfo actual, Map<String, NodeInfo> all,
                              List<String> problems) {
    if (actual == null) {
      problems.add(kind + " '" + declared.name() + "' is not in the model, whose " + kind + "s are " + all.keySet());
      return;
    }
    if (!(actual.getInfo() instanceof TensorInfo info)) {
      problems.add(kind + " '" + declared.name() + "' is not a tensor in the model (" + actual.getInfo() + ")");
      return;
    }
    Optional<OnnxJavaType> want = toOnnx(declared.datatype());
    if (want.isEmpty()) {
      problems.add(kind + " '" + declared.name() + "' is " + declared.datatype() + ", which ONNX Runtime's Java API"
          + " does not carry");
    } else if (want.get() != info.type) {
      problems.add(kind + " '" + declared.name() + "' is declared " + declared.datatype() + " but the model's is "
          + info.onnxType);
    }
    long[] model = info.getShape();
    long[] spec = declared.shape();
    if (model.length != spec.length) {
      problems.add(kind + " '" + declared.name() + "' is declared with shape " + Arrays.toString(spec)
          + " but the model's has rank " + model.length + " " + Arrays.toString(model));
      return;
    }
    for (int d = 0; d < model.length; d++) {
      // The model fixes a dimension (> 0) or leaves it free (-1, or a symbolic name).
      if (model[d] > 0 && spec[d] != model[d]) {
        problems.add(kind + " '" + declared.name() + "' dimension " + d + " is " + (spec[d] == -1 ? "free" : spec[d])
            + " in the spec but fixed to " + model[d] + " by the model" + (d == 0 ? " (a model that batches leaves"
            + " its first dimension free)" : ""));
      }
    }
  }

  private static String describe(NodeInfo n) {
    return n.getInfo() instanceof TensorInfo t ? t.onnxType + Arrays.toString(t.getShape()) : String.valueOf(n.getInfo());
  }
}
