package io.kiln.engines.pytorch.impl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.Tensor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Moves raw little-endian tensors in and out of the engine (DJL passes heap bytes to the engine in native
 * order, so the loader refuses big-endian hosts). Inputs are created in the predictor's
 * per-call manager and outputs are copied back to the heap before that manager closes, so no native
 * memory outlives a call.
 */
public final class TensorTranslator implements Translator<List<Tensor>, List<Tensor>> {

  @Override
  public NDList processInput(TranslatorContext ctx, List<Tensor> inputs) {
    NDManager manager = ctx.getNDManager();
    NDList list = new NDList(inputs.size());
    for (Tensor t : inputs) {
      list.add(toNdArray(manager, t));
    }
    return list;
  }

  @Override
  public List<Tensor> processOutput(TranslatorContext ctx, NDList list) {
    List<Tensor> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      out.add(fromNdArray("output" + i, list.get(i)));
    }
    return out;
  }

  /** No batchifier: the runner has stacked the requests already. */
  @Override
  public ai.djl.translate.Batchifier getBatchifier() {
    return null;
  }

  public static NDArray toNdArray(NDManager manager, Tensor t) {
    ai.djl.ndarray.types.DataType type = DjlTypes.toDjl(t.datatype())
        .orElseThrow(() -> new IllegalArgumentException(t.datatype() + " is not supported by the PyTorch engine"));
    NDArray array = manager.create(ByteBuffer.wrap(t.data()), new Shape(t.shape()), type);
    array.setName(t.name());
    return array;
  }

  public static Tensor fromNdArray(String name, NDArray array) {
    DataType type = DjlTypes.fromDjl(array.getDataType()).orElseThrow(
        () -> new ModelExecutionException("the model returned an output of type " + array.getDataType()
            + ", which has no protocol datatype"));
    return new Tensor(name, type, array.getShape().getShape(), array.toByteArray());
  }
}
