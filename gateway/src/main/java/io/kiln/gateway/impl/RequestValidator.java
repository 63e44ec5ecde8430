package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.impl.RequestHeader.InputHeader;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks a decoded request against the model's declared inputs and outputs, protocol-neutrally: every input
 * known, present once, of the declared datatype and an accepted shape; every requested output known and named
 * once. Errors name the field, e.g. {@code inputs[1].shape}. Stateless.
 */
final class RequestValidator {

  /** One validated input: its datatype and the element count its shape declares. */
  record InputPlan(int index, InputHeader header, DataType type, long elementCount) {

    String path() {
      return Fields.inputPath(index);
    }

    /** Bytes the elements take, or -1 for BYTES (variable length). */
    long fixedByteSize() {
      return type.byteSize() < 0 ? -1 : elementCount * type.byteSize();
    }
  }

  private RequestValidator() {
  }

  /**
   * @throws InferenceException kind INVALID_INPUT on the first problem found
   */
  static List<InputPlan> validate(RequestHeader request, ModelInfo model) {
    Map<String, TensorSpec> specs = new HashMap<>();
    for (TensorSpec s : model.inputs()) {
      specs.put(s.name(), s);
    }
    List<InputPlan> plans = new ArrayList<>(request.inputs().size());
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < request.inputs().size(); i++) {
      InputHeader in = request.inputs().get(i);
      String path = Fields.inputPath(i);
      TensorSpec spec = specs.get(in.name());
      if (spec == null) {
        throw InferenceException.invalid(path + ".name: model '" + model.name() + "' has no input '" + in.name()
            + "' (its inputs: " + names(model.inputs()) + ")");
      }
      if (!seen.add(in.name())) {
        throw InferenceException.invalid(path + ".name: input '" + in.name() + "' given more than once");
      }
      DataType type = DataType.parse(in.datatype()).orElseThrow(
          () -> InferenceException.invalid(path + ".datatype: unknown datatype '" + in.datatype() + "'"));
      if (type != spec.datatype()) {
        throw InferenceException.invalid(path + ".datatype: input '" + in.name() + "' is " + spec.datatype()
            + ", got " + type);
      }
      long count = elementCount(in.shape(), path);
      if (!spec.accepts(in.shape())) {
        throw InferenceException.invalid(path + ".shape: " + Arrays.toString(in.shape()) + " does not match "
            + Arrays.toString(spec.shape()) + " of input '" + in.name() + "'");
      }
      if (model.maxBatchSize() > 0 && in.shape().length > 0 && in.shape()[0] > model.maxBatchSize()) {
        throw InferenceException.invalid(path + ".shape: batch size " + in.shape()[0] + " exceeds max_batch_size "
            + model.maxBatchSize() + " of model '" + model.name() + "'");
      }
      if (type.byteSize() > 0 && count > Long.MAX_VALUE / type.byteSize()) {
        throw InferenceException.invalid(path + ".shape: " + Arrays.toString(in.shape()) + " is too large");
      }
      plans.add(new InputPlan(i, in, type, count));
    }
    for (TensorSpec s : model.inputs()) {
      if (!seen.contains(s.name())) {
        throw InferenceException.invalid("inputs: missing input '" + s.name() + "' of model '" + model.name() + "'");
      }
    }
    validateOutputs(request.outputs(), model);
    return plans;
  }

  private static void validateOutputs(List<OutputHeader> outputs, ModelInfo model) {
    Set<String> known = new HashSet<>();
    for (TensorSpec s : model.outputs()) {
      known.add(s.name());
    }
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < outputs.size(); i++) {
      OutputHeader out = outputs.get(i);
      String path = Fields.outputPath(i);
      if (!known.contains(out.name())) {
        throw InferenceException.invalid(path + ".name: model '" + model.name() + "' has no output '" + out.name()
            + "' (its outputs: " + names(model.outputs()) + ")");
      }
      if (!seen.add(out.name())) {
        throw InferenceException.invalid(path + ".name: output '" + out.name() + "' requested more than once");
      }
      if (out.parameters().containsKey(Fields.CLASSIFICATION)) {
        throw InferenceException.invalid(path + ".parameters.classification: not supported");
      }
    }
  }

  /** Elements in a request shape: every dimension must be >= 0 and the product must fit a long. */
  static long elementCount(long[] shape, String path) {
    for (long d : shape) {
      if (d < 0) {
        throw InferenceException.invalid(path + ".shape: dimensions must be >= 0, got " + Arrays.toString(shape));
      }
    }
    try {
      return Tensor.elementCount(shape);
    } catch (ArithmeticException e) {
      throw InferenceException.invalid(path + ".shape: " + Arrays.toString(shape) + " has too many elements");
    }
  }

  private static List<String> names(List<TensorSpec> specs) {
    return specs.stream().map(TensorSpec::name).toList();
  }
}
