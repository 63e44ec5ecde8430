package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.impl.RequestHeader.InputHeader;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.RequestValidator;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.ValidatedRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Plans the decoding of a request from its header, protocol-neutrally, validating it on the way with the
 * model's {@link RequestValidator} (the one check requests get; see there) before any tensor data is read.
 * The protocol's own checks are interleaved here: datatype spelling, element counts, unsupported output
 * options. Errors name the field, e.g. {@code inputs[1].shape}. Stateless.
 */
final class InputPlans {

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

  /** A header that passed; {@link #finish} turns the request decoded by its plans into a validated one. */
  record Checked(List<InputPlan> plans, RequestValidator.Check check) {

    ValidatedRequest finish(InferenceRequest decoded) {
      return check.finish(decoded);
    }
  }

  /**
   * The last model's validator (immutable and thread-safe), reused while requests keep naming the same
   * {@link ModelInfo} instance: building one per request was a map and a set per request. A volatile
   * pair, replaced whole, so a reader never sees one model's validator with another's info.
   */
  private static volatile Cached last;

  private record Cached(ModelInfo model, RequestValidator validator) {
  }

  private InputPlans() {
  }

  private static RequestValidator validator(ModelInfo model) {
    Cached c = last;
    if (c != null && c.model() == model) {
      return c.validator();
    }
    RequestValidator v = new RequestValidator(model.name(), model.signature(), model.maxBatchSize());
    last = new Cached(model, v);
    return v;
  }

  /**
   * @throws InferenceException kind INVALID_INPUT on the first problem found
   */
  static Checked check(RequestHeader request, ModelInfo model) {
    RequestValidator.Check check = validator(model).begin();
    List<InputPlan> plans = new ArrayList<>(request.inputs().size());
    for (int i = 0; i < request.inputs().size(); i++) {
      InputHeader in = request.inputs().get(i);
      String path = Fields.inputPath(i);
      TensorSpec spec = check.input(i, in.name());
      DataType type = DataType.parse(in.datatype()).orElseThrow(
          () -> InferenceException.invalid(path + ".datatype: unknown datatype '" + in.datatype() + "'"));
      check.datatype(i, spec, type);
      long count = elementCount(in.shape(), path);
      check.shape(i, spec, in.shape());
      if (type.byteSize() > 0 && count > Long.MAX_VALUE / type.byteSize()) {
        throw InferenceException.invalid(path + ".shape: " + Arrays.toString(in.shape()) + " is too large");
      }
      plans.add(new InputPlan(i, in, type, count));
    }
    check.inputsComplete();
    List<OutputHeader> outputs = request.outputs();
    for (int i = 0; i < outputs.size(); i++) {
      check.output(i, outputs.get(i).name());
      if (outputs.get(i).parameters().containsKey(Fields.CLASSIFICATION)) {
        throw InferenceException.invalid(Fields.outputPath(i) + ".parameters.classification: not supported");
      }
    }
    return new Checked(plans, check);
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
}
