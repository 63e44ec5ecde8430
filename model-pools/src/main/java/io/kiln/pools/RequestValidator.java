package io.kiln.pools;

import io.kiln.pools.spi.ByteElements;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The one check of inference requests against a model's {@link ModelSignature}: every input known, given
 * once, of the declared datatype and an accepted shape (a scalar's is {@code []}), at most {@code maxBatchSize}
 * rows along the batched inputs' first dimension; every requested output known and asked for once. It runs
 * once per request, at the edge that first knows the model: the gateway's decoders (on the request header
 * before the data is read, see {@link #begin}) or, for a request that reached a pool unchecked (a direct
 * {@link PoolClient} call), the {@link PoolManager} at submit. What passes is a {@link ValidatedRequest}, which
 * the pool and its workers trust.
 *
 * <p>Every failure is an {@link InferenceException} of kind INVALID_INPUT whose message names the field
 * ({@code inputs[1].shape: ...}); messages quote only what the client sent and the signature. Immutable
 * and thread-safe; each {@link Check} is one request's and not thread-safe.
 */
public final class RequestValidator {

  private final String model;
  private final ModelSignature signature;
  private final int maxBatchSize;
  private final Map<String, TensorSpec> inputs = new HashMap<>();
  private final Set<String> outputs = new HashSet<>();

  /**
   * @param model the model's name, as messages quote it
   * @param maxBatchSize the largest first dimension a request's batched inputs may carry; 0: not limited
   */
  public RequestValidator(String model, ModelSignature signature, int maxBatchSize) {
    this.model = Objects.requireNonNull(model, "model");
    this.signature = Objects.requireNonNull(signature, "signature");
    if (maxBatchSize < 0) {
      throw new IllegalArgumentException("maxBatchSize must be >= 0, got " + maxBatchSize);
    }
    this.maxBatchSize = maxBatchSize;
    signature.inputs().forEach(s -> inputs.put(s.name(), s));
    signature.outputs().forEach(s -> outputs.add(s.name()));
  }

  public ModelSignature signature() {
    return signature;
  }

  /**
   * Checks a decoded request as a whole.
   *
   * @throws InferenceException INVALID_INPUT on the first problem found
   */
  public ValidatedRequest validate(InferenceRequest request) {
    Check check = begin();
    List<Tensor> tensors = request.inputs();
    for (int i = 0; i < tensors.size(); i++) {
      Tensor t = tensors.get(i);
      TensorSpec spec = check.input(i, t.name());
      check.datatype(i, spec, t.datatype());
      check.shape(i, spec, t.shape());
      if (t.datatype() == DataType.BYTES) {
        check.bytesData(i, t);
      }
    }
    check.inputsComplete();
    List<String> wanted = request.outputs();
    for (int i = 0; i < wanted.size(); i++) {
      check.output(i, wanted.get(i));
    }
    return check.finish(request);
  }

  /**
   * Starts checking one request field by field, in the order a protocol decoder reads them: for each input
   * {@link Check#input}, {@link Check#datatype}, {@link Check#shape}; then {@link Check#inputsComplete};
   * for each requested output {@link Check#output}; once the tensors are decoded (by the shapes checked),
   * {@link Check#finish}. The decoder interleaves its own protocol checks (datatype spelling, element
   * counts, sizes) between these.
   */
  public Check begin() {
    return new Check();
  }

  /** One request's check in progress; every method throws INVALID_INPUT on a problem. */
  public final class Check {
    private final Set<String> seenInputs = new HashSet<>();
    private final Set<String> seenOutputs = new HashSet<>();
    private int declared;
    private boolean complete;

    private Check() {
    }

    /** Input {@code index} is named {@code name}: the model has it, and it was not given before. */
    public TensorSpec input(int index, String name) {
      TensorSpec spec = inputs.get(name);
      if (spec == null) {
        throw InferenceException.invalid(inputPath(index) + ".name: model '" + model + "' has no input '" + name
            + "' (its inputs: " + signature.inputNames() + ")");
      }
      if (!seenInputs.add(name)) {
        throw InferenceException.invalid(inputPath(index) + ".name: input '" + name + "' given more than once");
      }
      declared++;
      return spec;
    }

    public void datatype(int index, TensorSpec spec, DataType type) {
      if (type != spec.datatype()) {
        throw InferenceException.invalid(inputPath(index) + ".datatype: input '" + spec.name() + "' is "
            + spec.datatype() + ", got " + type);
      }
    }

    /**
     * The declared shape fits the spec and, along a {@link TensorSpec#batched batched} input's first dimension, the
     * batch limit. A scalar input's shape is {@code []} (its one element is then the decoders' element count).
     */
    public void shape(int index, TensorSpec spec, long[] shape) {
      if (!spec.accepts(shape)) {
        throw InferenceException.invalid(inputPath(index) + ".shape: " + Arrays.toString(shape) + " does not match "
            + Arrays.toString(spec.shape()) + " of input '" + spec.name() + "'"
            + (spec.scalar() ? " (a scalar: shape [] and one element)" : ""));
      }
      if (maxBatchSize > 0 && spec.batched() && shape[0] > maxBatchSize) {
        throw InferenceException.invalid(inputPath(index) + ".shape: batch size " + shape[0] + " exceeds max_batch_size "
            + maxBatchSize + " of model '" + model + "'");
      }
    }

    /**
     * A BYTES input's data holds exactly its shape's elements, each a 4-byte little-endian length and that many
     * bytes. The gateway's decoders check this as they decode; {@link #validate} checks it for a request that
     * arrives already decoded.
     */
    public void bytesData(int index, Tensor t) {
      try {
        ByteElements.offsets(t.data(), t.elementCount(), inputPath(index) + ".data: input '" + t.name() + "'");
      } catch (IllegalArgumentException e) {
        throw InferenceException.invalid(e.getMessage());
      }
    }

    /** Every input of the model was given. */
    public void inputsComplete() {
      if (declared < inputs.size()) {
        for (TensorSpec s : signature.inputs()) {
          if (!seenInputs.contains(s.name())) {
            throw InferenceException.invalid("inputs: missing input '" + s.name() + "' of model '" + model + "'");
          }
        }
      }
      complete = true;
    }

    /** Requested output {@code index} is named {@code name}: the model has it, and it was not asked for before. */
    public void output(int index, String name) {
      if (!outputs.contains(name)) {
        throw InferenceException.invalid("outputs[" + index + "].name: model '" + model + "' has no output '" + name
            + "' (its outputs: " + signature.outputNames() + ")");
      }
      if (!seenOutputs.add(name)) {
        throw InferenceException.invalid("outputs[" + index + "].name: output '" + name + "' requested more than once");
      }
    }

    /**
     * The decoded request, whose inputs and outputs are the ones checked, as the pool will trust it.
     * (Whether its inputs can be batched at all, with a first dimension they share and that is not 0, is
     * the pool's own invariant: every pool checks it on submit, validated or not.)
     */
    public ValidatedRequest finish(InferenceRequest request) {
      if (!complete || request.inputs().size() != declared || request.outputs().size() != seenOutputs.size()) {
        throw new IllegalStateException("finish() before every input and output of the request was checked");
      }
      return new ValidatedRequest(request, signature);
    }
  }

  private static String inputPath(int index) {
    return "inputs[" + index + "]";
  }
}
