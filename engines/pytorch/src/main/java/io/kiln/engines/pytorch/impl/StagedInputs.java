package io.kiln.engines.pytorch.impl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.translate.TranslatorContext;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * A DJL runner's input memory: one direct buffer per model input, kept across calls, into which each batch's rows
 * are gathered straight from the requests' tensors. DJL makes a native tensor over a direct buffer without a copy
 * (PyTorch's {@code from_blob}); from a heap array it allocates a fresh direct buffer per input per call and copies
 * into it, after Kiln had already copied the rows into one stacked array. Here a batch costs one copy per row and
 * no allocation once the buffers have grown to the batch's size.
 *
 * <p>Safe to reuse because a runner is called by one thread at a time and the native tensors made over a buffer
 * are closed with the predictor's per-call manager, after the outputs were copied to the heap, before the next
 * call writes the buffer again. Buffers of inputs over {@value #MAX_KEPT_BYTES} bytes are not kept (a one-off
 * batch of large images should not pin that much native memory for the worker's life). Not thread-safe.
 */
final class StagedInputs {

  /** The largest input buffer kept between calls. */
  static final int MAX_KEPT_BYTES = 64 << 20;

  /** One call's inputs, gathered: buffers, shapes and datatypes in spec order. */
  record Batch(List<ByteBuffer> data, List<Shape> shapes, List<ai.djl.ndarray.types.DataType> types,
               List<String> names) {
  }

  private final List<TensorSpec> inputs;
  private final ByteBuffer[] kept;

  StagedInputs(List<TensorSpec> inputs) {
    this.inputs = List.copyOf(inputs);
    this.kept = new ByteBuffer[inputs.size()];
  }

  /**
   * Gathers the batch's rows: input {@code i} of every request, in request order, into buffer {@code i}; an input
   * that is not batched (a scalar, a fixed first dimension: equal in every request) once, the first request's.
   *
   * @param ordered each request's inputs in spec order, checked to stack
   * @throws InferenceException TOO_LARGE if an input stacked over the batch would exceed one tensor's limit
   */
  Batch gather(List<List<Tensor>> ordered, long totalRows) {
    int n = inputs.size();
    List<ByteBuffer> data = new ArrayList<>(n);
    List<Shape> shapes = new ArrayList<>(n);
    List<ai.djl.ndarray.types.DataType> types = new ArrayList<>(n);
    List<String> names = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String name = inputs.get(i).name();
      Tensor first = ordered.get(0).get(i);
      List<List<Tensor>> parts = inputs.get(i).batched() ? ordered : ordered.subList(0, 1);
      long bytes = 0;
      for (List<Tensor> request : parts) {
        bytes += request.get(i).data().length;
      }
      if (bytes > AbstractModelRunner.MAX_TENSOR_BYTES) {
        throw new InferenceException(InferenceException.Kind.TOO_LARGE, "input '" + name + "' stacked over the batch"
            + " would take " + bytes + " bytes, more than the " + AbstractModelRunner.MAX_TENSOR_BYTES + " one tensor can hold");
      }
      ByteBuffer buf = buffer(i, (int) bytes);
      for (List<Tensor> request : parts) {
        buf.put(request.get(i).data());
      }
      buf.flip();
      long[] shape = first.shape().clone();
      if (parts.size() > 1) {
        shape[0] = totalRows;
      }
      data.add(buf);
      shapes.add(new Shape(shape));
      types.add(DjlTypes.toDjl(first.datatype()).orElseThrow(() -> new IllegalArgumentException(first.datatype()
          + " is not supported by the PyTorch engine")));
      names.add(name);
    }
    return new Batch(data, shapes, types, names);
  }

  private ByteBuffer buffer(int i, int bytes) {
    if (bytes > MAX_KEPT_BYTES) {
      return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    }
    ByteBuffer b = kept[i];
    if (b == null || b.capacity() < bytes) {
      int capacity = Math.max(bytes, b == null ? 1024 : Math.min(MAX_KEPT_BYTES, b.capacity() * 2));
      b = ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
      kept[i] = b;
    }
    b.clear();
    b.limit(bytes);
    return b;
  }

  /** Makes the engine's tensors over the gathered buffers and copies the outputs back to the heap. */
  static final class Translator implements ai.djl.translate.Translator<Batch, List<Tensor>> {

    @Override
    public NDList processInput(TranslatorContext ctx, Batch batch) {
      NDManager manager = ctx.getNDManager();
      NDList list = new NDList(batch.data().size());
      for (int i = 0; i < batch.data().size(); i++) {
        NDArray array = manager.create(batch.data().get(i), batch.shapes().get(i), batch.types().get(i));
        array.setName(batch.names().get(i));
        list.add(array);
      }
      return list;
    }

    @Override
    public List<Tensor> processOutput(TranslatorContext ctx, NDList list) {
      List<Tensor> out = new ArrayList<>(list.size());
      for (int i = 0; i < list.size(); i++) {
        out.add(TensorTranslator.fromNdArray("output" + i, list.get(i)));
      }
      return out;
    }

    /** No batchifier: the rows are stacked already. */
    @Override
    public ai.djl.translate.Batchifier getBatchifier() {
      return null;
    }
  }
}
