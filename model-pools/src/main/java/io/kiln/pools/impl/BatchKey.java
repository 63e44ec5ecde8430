package io.kiln.pools.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What requests must share to be stacked into one batch: the inputs (in order) with their names, element
 * types and every dimension but the first, and the requested outputs (in order). Order matters because a
 * worker may stack and split by position; requests that differ only in order are rarely worth batching.
 * Request parameters are not part of the key: they are protocol options the gateway handles.
 *
 * <p>Inputs that are not {@link TensorSpec#batched() batched} go to the model once per batch, so requests share a
 * batch only where those agree: a scalar's value is part of the key (requests with {@code sr} 16000 batch together,
 * never with {@code sr} 8000), and a request with an input whose spec fixes its first dimension, or with no batched
 * input at all, batches with no other: it is {@link #alone()}, a key equal only to itself. The request's rows are
 * its batched inputs' first dimension, 1 when it has none.
 */
final class BatchKey {

  private final Input[] inputs;
  private final List<String> outputs;
  private final boolean stream;
  private final String model; // a multiplexed pool's model: a batch is one model; null otherwise
  private final String pin; // a sequence pool's worker: a batch is one worker's sequences; null otherwise
  private final boolean alone;
  private final long rows; // this request's, not part of the key's identity
  private final int hash;

  private BatchKey(Input[] inputs, List<String> outputs, boolean stream, String model, boolean alone, long rows) {
    this(inputs, outputs, stream, model, null, alone, rows);
  }

  private BatchKey(Input[] inputs, List<String> outputs, boolean stream, String model, String pin, boolean alone,
                   long rows) {
    this.pin = pin;
    this.inputs = inputs;
    this.outputs = outputs;
    this.stream = stream;
    this.model = model;
    this.alone = alone;
    this.rows = rows;
    this.hash = alone ? System.identityHashCode(this)
        : 31 * (31 * Arrays.hashCode(inputs) + outputs.hashCode() + (stream ? 1 : 0)) + Objects.hashCode(model)
        + 17 * Objects.hashCode(pin);
  }

  /**
   * This key for a request of a sequence held on {@code worker}: it batches only with that worker's sequences, and
   * with none when {@code alone} (a state the model takes whole cannot be stacked).
   */
  BatchKey pinned(String worker, boolean alone) {
    return new BatchKey(inputs, outputs, stream, model, Objects.requireNonNull(worker, "worker"), alone || this.alone,
        rows);
  }

  /** This key for the requests of one model of a multiplexed pool: they batch only with that model's. */
  BatchKey withModel(String name) {
    return new BatchKey(inputs, outputs, stream, Objects.requireNonNull(name, "model"), alone, rows);
  }

  /** The model of a multiplexed pool's request; null in a pool of one model. */
  String model() {
    return model;
  }

  /** Whether the request batches with no other (see the class comment): its batch goes at once, alone. */
  boolean alone() {
    return alone;
  }

  /** The request's rows: its batched inputs' first dimension, 1 when it has no batched input. */
  long rows() {
    return rows;
  }

  /**
   * The inputs of {@code signature} that have dimensions but are not batched (their spec fixes the first one):
   * what {@link #of(InferenceRequest, Set)} needs to know beyond the request. Scalars are known by their rank.
   */
  static Set<String> wholeInputs(ModelSignature signature) {
    return signature == null ? Set.of() : signature.inputs().stream().filter(s -> !s.scalar() && !s.batched())
        .map(TensorSpec::name).collect(Collectors.toUnmodifiableSet());
  }

  /** {@link #of(InferenceRequest, Set)} of a request whose inputs of rank 1 or more are all batched. */
  static BatchKey of(InferenceRequest request) {
    return of(request, Set.of());
  }

  /**
   * The key of a request, checking that it can be batched at all.
   *
   * @param whole the names of inputs passed whole despite their dimensions ({@link #wholeInputs})
   * @throws InferenceException INVALID_INPUT if it has no inputs, or batched inputs that disagree on the batch size
   */
  static BatchKey of(InferenceRequest request, Set<String> whole) {
    List<Tensor> tensors = request.inputs();
    if (tensors.isEmpty()) {
      throw InferenceException.invalid("request has no inputs");
    }
    Input[] inputs = new Input[tensors.size()];
    long rows = -1;
    String rowsFrom = null;
    boolean alone = false;
    for (int i = 0; i < inputs.length; i++) {
      Tensor t = tensors.get(i);
      long[] shape = t.shape();
      if (shape.length == 0) {
        inputs[i] = new Input(t.name(), t.datatype(), false, shape, t.data());
        continue;
      }
      if (whole.contains(t.name())) {
        alone = true;
        inputs[i] = new Input(t.name(), t.datatype(), false, shape, null);
        continue;
      }
      if (rows >= 0 && shape[0] != rows) {
        throw InferenceException.invalid("inputs disagree on the batch size (first dimension): '"
            + rowsFrom + "' has " + rows + ", '" + t.name() + "' has " + shape[0]);
      }
      rows = shape[0];
      rowsFrom = t.name();
      inputs[i] = new Input(t.name(), t.datatype(), true, Arrays.copyOfRange(shape, 1, shape.length), null);
    }
    if (rows < 0) {
      return new BatchKey(inputs, request.outputs(), false, null, true, 1);
    }
    return new BatchKey(inputs, request.outputs(), false, null, alone, rows);
  }

  /** {@link #admit}, for a stream: streams batch only with streams (their worker steps them together). */
  static BatchKey admitStream(InferenceRequest request, Set<String> whole) {
    BatchKey k = admit(request, whole);
    return new BatchKey(k.inputs, k.outputs, true, null, k.alone, k.rows);
  }

  /** {@link #admit(InferenceRequest, Set)} of a request whose inputs of rank 1 or more are all batched. */
  static BatchKey admit(InferenceRequest request) {
    return admit(request, Set.of());
  }

  /**
   * {@link #of}, for a request the pool is to run: it also needs a row, or a worker has nothing to stack.
   * Checked for every request, validated or not: it protects the workers.
   */
  static BatchKey admit(InferenceRequest request, Set<String> whole) {
    BatchKey key = of(request, whole);
    if (key.rows == 0) {
      for (Tensor t : request.inputs()) {
        if (t.shape().length > 0 && !whole.contains(t.name())) {
          throw InferenceException.invalid("input '" + t.name() + "' has no rows (first dimension is 0)");
        }
      }
    }
    return key;
  }

  @Override
  public boolean equals(Object o) {
    if (alone || o == this) {
      return o == this;
    }
    return o instanceof BatchKey k && k.hash == hash && !k.alone && k.stream == stream
        && Arrays.equals(k.inputs, inputs) && k.outputs.equals(outputs) && Objects.equals(k.model, model)
        && Objects.equals(k.pin, pin);
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public String toString() {
    return (model == null ? "" : model + ":") + Arrays.toString(inputs) + "->" + outputs + (alone ? " alone" : "");
  }

  /**
   * One input as the key sees it: a batched one by its shape past the first dimension, a scalar by its value, an
   * input passed whole by its full shape (its key is alone anyway).
   */
  private record Input(String name, DataType datatype, boolean batched, long[] shape, byte[] value) {

    @Override
    public boolean equals(Object o) {
      return o instanceof Input i && i.name.equals(name) && i.datatype == datatype && i.batched == batched
          && Arrays.equals(i.shape, shape) && Arrays.equals(i.value, value);
    }

    @Override
    public int hashCode() {
      return ((name.hashCode() * 31 + datatype.ordinal()) * 31 + Arrays.hashCode(shape)) * 31 + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
      if (value != null) {
        return name + ":" + datatype + "[]=0x" + HexFormat.of().formatHex(value, 0, Math.min(value.length, 16))
            + (value.length > 16 ? "..." : "");
      }
      if (!batched) {
        return name + ":" + datatype + Arrays.toString(shape);
      }
      return name + ":" + datatype + "[-1" + (shape.length == 0 ? "" : ", ") + Arrays.toString(shape).substring(1);
    }
  }
}
