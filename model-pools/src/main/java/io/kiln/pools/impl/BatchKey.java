package io.kiln.pools.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What requests must share to be stacked into one batch: the inputs (in order) with their names, element
 * types and every dimension but the first, and the requested outputs (in order). Order matters because a
 * worker may stack and split by position; requests that differ only in order are rarely worth batching.
 * Request parameters are not part of the key: they are protocol options the gateway handles.
 */
final class BatchKey {

  private final Input[] inputs;
  private final List<String> outputs;
  private final boolean stream;
  private final String model; // a multiplexed pool's model: a batch is one model; null otherwise
  private final int hash;

  private BatchKey(Input[] inputs, List<String> outputs, boolean stream) {
    this(inputs, outputs, stream, null);
  }

  private BatchKey(Input[] inputs, List<String> outputs, boolean stream, String model) {
    this.inputs = inputs;
    this.outputs = outputs;
    this.stream = stream;
    this.model = model;
    this.hash = 31 * (31 * Arrays.hashCode(inputs) + outputs.hashCode() + (stream ? 1 : 0)) + Objects.hashCode(model);
  }

  /** This key for the requests of one model of a multiplexed pool: they batch only with that model's. */
  BatchKey withModel(String name) {
    return new BatchKey(inputs, outputs, stream, Objects.requireNonNull(name, "model"));
  }

  /** The model of a multiplexed pool's request; null in a pool of one model. */
  String model() {
    return model;
  }

  /**
   * The key of a request, checking that it can be batched at all.
   *
   * @throws InferenceException INVALID_INPUT if it has no inputs, an input without a batch dimension, or
   *     inputs that disagree on the batch size
   */
  static BatchKey of(InferenceRequest request) {
    List<Tensor> tensors = request.inputs();
    if (tensors.isEmpty()) {
      throw InferenceException.invalid("request has no inputs");
    }
    Input[] inputs = new Input[tensors.size()];
    long rows = -1;
    for (int i = 0; i < inputs.length; i++) {
      Tensor t = tensors.get(i);
      long[] shape = t.shape();
      if (shape.length == 0) {
        throw InferenceException.invalid("input '" + t.name() + "' has no batch dimension (shape [])");
      }
      if (rows >= 0 && shape[0] != rows) {
        throw InferenceException.invalid("inputs disagree on the batch size (first dimension): '"
            + tensors.get(0).name() + "' has " + rows + ", '" + t.name() + "' has " + shape[0]);
      }
      rows = shape[0];
      inputs[i] = new Input(t.name(), t.datatype(), Arrays.copyOfRange(shape, 1, shape.length));
    }
    return new BatchKey(inputs, request.outputs(), false);
  }

  /** {@link #admit}, for a stream: streams batch only with streams (their worker steps them together). */
  static BatchKey admitStream(InferenceRequest request) {
    BatchKey k = admit(request);
    return new BatchKey(k.inputs, k.outputs, true);
  }

  /**
   * {@link #of}, for a request the pool is to run: it also needs a row, or a worker has nothing to stack.
   * Checked for every request, validated or not: it protects the workers.
   */
  static BatchKey admit(InferenceRequest request) {
    BatchKey key = of(request);
    if (rows(request) == 0) {
      throw InferenceException.invalid("input '" + request.inputs().get(0).name() + "' has no rows (first dimension is 0)");
    }
    return key;
  }

  /** The request's rows: the first dimension of its inputs (valid once {@link #of} accepted it). */
  static long rows(InferenceRequest request) {
    return request.inputs().get(0).shape()[0];
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BatchKey k && k.hash == hash && k.stream == stream && Arrays.equals(k.inputs, inputs)
        && k.outputs.equals(outputs) && Objects.equals(k.model, model);
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public String toString() {
    return (model == null ? "" : model + ":") + Arrays.toString(inputs) + "->" + outputs;
  }

  private record Input(String name, DataType datatype, long[] innerShape) {

    @Override
    public boolean equals(Object o) {
      return o instanceof Input i && i.name.equals(name) && i.datatype == datatype
          && Arrays.equals(i.innerShape, innerShape);
    }

    @Override
    public int hashCode() {
      return (name.hashCode() * 31 + datatype.ordinal()) * 31 + Arrays.hashCode(innerShape);
    }

    @Override
    public String toString() {
      return name + ":" + datatype + "[-1" + (innerShape.length == 0 ? "" : ", ")
          + Arrays.toString(innerShape).substring(1);
    }
  }
}
