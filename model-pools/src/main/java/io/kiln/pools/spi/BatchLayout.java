package io.kiln.pools.spi;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * How a runner lays out a batch of requests that passed the {@link io.kiln.pools.RequestValidator}: each
 * request's inputs in the order the model takes them, whether the batch stacks, which outputs each request
 * gets. It does not re-validate requests (the edge did, once); it keeps only the invariants without which
 * the worker could not run the batch at all, as cheap checks per batch, failing INVALID_INPUT.
 *
 * <p>Inputs whose spec is {@link TensorSpec#batched() batched} stack along their first dimension; the others (scalars,
 * fixed first dimensions) go to the model whole, once per batch. A batch runs as one call only where that is sound
 * ({@link #oneCall}): the model has a batched input, every output is batched (a scalar output, say, could depend on
 * the whole batch, so no request could be given its own), and the requests agree on every input passed whole.
 * Otherwise each request runs on its own.
 */
final class BatchLayout {

  private final List<TensorSpec> inputs;
  private final List<String> outputNames;
  private final boolean hasBatchedInput;
  private final boolean stacks;

  BatchLayout(List<TensorSpec> inputs, List<TensorSpec> outputs) {
    this.inputs = List.copyOf(inputs);
    this.outputNames = outputs.stream().map(TensorSpec::name).toList();
    this.hasBatchedInput = inputs.stream().anyMatch(TensorSpec::batched);
    this.stacks = hasBatchedInput && outputs.stream().allMatch(TensorSpec::batched);
  }

  /** Whether input {@code i} (spec order) stacks along its first dimension. */
  boolean batched(int i) {
    return inputs.get(i).batched();
  }

  /** Whether the model has an input that stacks: its batched outputs' first dimension is then the rows'. */
  boolean hasBatchedInput() {
    return hasBatchedInput;
  }

  /** A request's rows, from its inputs in spec order: its batched inputs' first dimension, 1 when it has none. */
  long rows(List<Tensor> ordered) {
    for (int i = 0; i < inputs.size(); i++) {
      if (inputs.get(i).batched()) {
        return ordered.get(i).shape()[0];
      }
    }
    return 1;
  }

  /**
   * Whether the requests of {@code ordered} (each one's inputs in spec order) can run as one call: see the class
   * comment. A single request always can.
   */
  boolean oneCall(List<List<Tensor>> ordered) {
    if (ordered.size() == 1) {
      return true;
    }
    if (!stacks) {
      return false;
    }
    List<Tensor> first = ordered.get(0);
    for (int i = 0; i < inputs.size(); i++) {
      if (inputs.get(i).batched()) {
        continue;
      }
      Tensor x = first.get(i);
      for (int r = 1; r < ordered.size(); r++) {
        Tensor y = ordered.get(r).get(i);
        if (y != x && (y.datatype() != x.datatype() || !Arrays.equals(y.shape(), x.shape())
            || !Arrays.equals(y.data(), x.data()))) {
          return false;
        }
      }
    }
    return true;
  }

  /** The request's inputs in spec order (a validated request has each exactly once). */
  List<Tensor> ordered(InferenceRequest request) {
    List<Tensor> given = request.inputs();
    List<Tensor> ordered = new ArrayList<>(inputs.size());
    for (int i = 0; i < inputs.size(); i++) {
      String name = inputs.get(i).name();
      // Clients mostly send the inputs in spec order: try the same position first.
      Tensor t = i < given.size() && given.get(i).name().equals(name) ? given.get(i) : find(given, name);
      if (t == null) {
        throw InferenceException.invalid("missing input '" + name + "'");
      }
      ordered.add(t);
    }
    return ordered;
  }

  /**
   * Checks that the requests of one batch can be stacked: for each batched input, every request agrees with the
   * first one on the element type and all but the first dimension (the pool batches only such requests).
   */
  void checkStackable(List<InferenceRequest> batch, List<List<Tensor>> ordered) {
    List<Tensor> first = ordered.get(0);
    for (int r = 1; r < ordered.size(); r++) {
      List<Tensor> mine = ordered.get(r);
      for (int i = 0; i < inputs.size(); i++) {
        if (!inputs.get(i).batched()) {
          continue; // passed whole: oneCall compares them
        }
        Tensor x = first.get(i);
        Tensor y = mine.get(i);
        long[] a = x.shape();
        long[] b = y.shape();
        if (x.datatype() != y.datatype() || !Arrays.equals(a, 1, a.length, b, 1, b.length)) {
          throw InferenceException.invalid("input '" + inputs.get(i).name() + "' of request " + describe(batch, r)
              + " has shape " + Arrays.toString(b) + " but request " + describe(batch, 0) + " has "
              + Arrays.toString(a) + "; requests batched together must agree on all but the first dimension");
        }
      }
    }
  }

  /**
   * Indices into the model's outputs that a request asked for, in the order it asked; all of them when it
   * named none.
   */
  int[] selectedOutputs(InferenceRequest request) {
    List<String> wanted = request.outputs();
    if (wanted.isEmpty()) {
      int[] all = new int[outputNames.size()];
      Arrays.setAll(all, i -> i);
      return all;
    }
    int[] picked = new int[wanted.size()];
    for (int i = 0; i < picked.length; i++) {
      picked[i] = outputNames.indexOf(wanted.get(i));
      if (picked[i] < 0) {
        throw InferenceException.invalid("unknown output '" + wanted.get(i) + "'");
      }
    }
    return picked;
  }

  private static Tensor find(List<Tensor> given, String name) {
    for (Tensor t : given) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    return null;
  }

  private static String describe(List<InferenceRequest> batch, int index) {
    String id = batch.get(index).id();
    if (id.length() > 64) {
      id = id.substring(0, 64) + "...";
    }
    return id.isEmpty() ? "#" + index : "#" + index + " (id '" + id + "')";
  }
}
