package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
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
 * Checks requests against a model's declared inputs and outputs and orders each request's inputs as the
 * model takes them. Every failure is an {@link InferenceException} of kind INVALID_INPUT whose message
 * names the input or output; messages quote only what the client sent and the spec, never internals.
 */
final class RequestChecker {

  private final List<TensorSpec> inputs;
  private final List<String> inputNames;
  private final List<String> outputNames;

  RequestChecker(List<TensorSpec> inputs, List<String> outputNames) {
    this.inputs = List.copyOf(inputs);
    this.inputNames = inputs.stream().map(TensorSpec::name).toList();
    this.outputNames = List.copyOf(outputNames);
  }

  /**
   * Checks one request on its own.
   *
   * @return its inputs in spec order
   */
  List<Tensor> check(InferenceRequest request) {
    Map<String, Tensor> byName = new HashMap<>();
    for (Tensor t : request.inputs()) {
      if (!inputNames.contains(t.name())) {
        throw InferenceException.invalid("unexpected input '" + t.name() + "'; the model takes " + inputNames);
      }
      if (byName.put(t.name(), t) != null) {
        throw InferenceException.invalid("input '" + t.name() + "' is given more than once");
      }
    }
    List<Tensor> ordered = new ArrayList<>(inputs.size());
    long rows = -1;
    String rowsFrom = null;
    for (TensorSpec spec : inputs) {
      Tensor t = byName.get(spec.name());
      if (t == null) {
        throw InferenceException.invalid("missing input '" + spec.name() + "'");
      }
      if (t.datatype() != spec.datatype()) {
        throw InferenceException.invalid("input '" + spec.name() + "' must be " + spec.datatype() + ", got "
            + t.datatype());
      }
      if (!spec.accepts(t.shape())) {
        throw InferenceException.invalid("input '" + spec.name() + "' has shape " + Arrays.toString(t.shape())
            + ", the model accepts " + Arrays.toString(spec.shape()) + " (-1 = any size)");
      }
      long r = t.shape()[0];
      if (r == 0) {
        throw InferenceException.invalid("input '" + spec.name() + "' has no rows (first dimension is 0)");
      }
      if (rows == -1) {
        rows = r;
        rowsFrom = spec.name();
      } else if (r != rows) {
        throw InferenceException.invalid("input '" + spec.name() + "' has " + r + " rows but input '" + rowsFrom
            + "' has " + rows + "; the inputs of one request must share their first dimension");
      }
      ordered.add(t);
    }
    checkOutputs(request.outputs());
    return ordered;
  }

  /**
   * Checks that the requests of one batch can be stacked: for each input, every request agrees with the
   * first one on all but the first dimension.
   */
  void checkStackable(List<InferenceRequest> batch, List<List<Tensor>> ordered) {
    List<Tensor> first = ordered.get(0);
    for (int r = 1; r < ordered.size(); r++) {
      List<Tensor> mine = ordered.get(r);
      for (int i = 0; i < inputs.size(); i++) {
        long[] a = first.get(i).shape();
        long[] b = mine.get(i).shape();
        if (!Arrays.equals(a, 1, a.length, b, 1, b.length)) {
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
    }
    return picked;
  }

  private void checkOutputs(List<String> wanted) {
    Set<String> seen = new HashSet<>();
    for (String name : wanted) {
      if (!outputNames.contains(name)) {
        throw InferenceException.invalid("unknown output '" + name + "'; the model has " + outputNames);
      }
      if (!seen.add(name)) {
        throw InferenceException.invalid("output '" + name + "' is requested more than once");
      }
    }
  }

  private static String describe(List<InferenceRequest> batch, int index) {
    String id = batch.get(index).id();
    if (id.length() > 64) {
      id = id.substring(0, 64) + "...";
    }
    return id.isEmpty() ? "#" + index : "#" + index + " (id '" + id + "')";
  }
}
