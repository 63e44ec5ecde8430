package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.SequenceSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The implicit state a worker keeps for the sequences its pool sent it (see {@link SequenceSpec}): before a batch
 * runs, each request gets its sequence's state tensors as inputs (fresh ones, every element the spec's
 * {@code init}, at {@code sequence_start}); after it ran, each request's state outputs become its sequence's state
 * and are taken out of its answer. A failed batch changes no state. {@code sequence_end} frees the state once its
 * request ran; the pool manager frees expired sequences ({@link #end}); a state left behind by a manager that lost
 * track of it (a manager restart) is dropped after twice the idle timeout, measured from its last request here.
 *
 * <p>Not thread-safe: the worker's own thread only (a worker actor is serial).
 */
public final class SequenceStates {

  /** How a lost sequence's message starts, so that the pool manager can tell it from bad input (both 400 here). */
  public static final String LOST = "sequence lost: ";

  private final SequenceSpec spec;
  private final ModelSpec model;
  private final String worker;
  private final LongSupplier nanoClock;
  private final Map<String, Held> held = new HashMap<>();
  private final Set<String> stateOutputs;

  private static final class Held {
    Map<String, Tensor> tensors; // by state input name
    long usedNanos;
  }

  /** @param worker names the worker in messages */
  public SequenceStates(ModelSpec model, String worker, LongSupplier nanoClock) {
    this.model = model;
    this.spec = java.util.Objects.requireNonNull(model.sequence(), "model.sequence");
    this.worker = worker;
    this.nanoClock = nanoClock;
    this.stateOutputs = spec.stateOutputs();
  }

  /** Sequences holding state here now. */
  public int size() {
    return held.size();
  }

  /** Whether {@code id}'s state is held here. */
  public boolean holds(String id) {
    return held.containsKey(id);
  }

  /** Frees the states of {@code ids} (ended or expired in the manager's view); returns how many were held. */
  public int end(List<String> ids) {
    int n = 0;
    for (String id : ids) {
      n += held.remove(id) != null ? 1 : 0;
    }
    return n;
  }

  /**
   * Runs {@code batch} through {@code runner} with each request's state fed in and taken out again; see the class
   * comment.
   *
   * @throws InferenceException INVALID_INPUT when a request names no sequence, two name the same one, or one that is
   *     not started names a sequence whose state is not here (its message then starts with {@link #LOST})
   */
  public List<List<Tensor>> run(List<InferenceRequest> batch, Function<List<InferenceRequest>, List<List<Tensor>>> runner) {
    long now = nanoClock.getAsLong();
    long forget = spec.idleTimeout().toNanos() * 2;
    held.values().removeIf(h -> now - h.usedNanos > forget);
    List<InferenceRequest> fed = new ArrayList<>(batch.size());
    List<String> ids = new ArrayList<>(batch.size());
    Set<String> seen = new HashSet<>();
    for (InferenceRequest r : batch) {
      String id = SequenceSpec.idOf(r.parameters());
      if (id == null) {
        throw InferenceException.invalid("parameters." + SequenceSpec.SEQUENCE_ID + ": required by a sequence model");
      }
      if (!seen.add(id)) {
        throw InferenceException.invalid("sequence '" + id + "' has two requests in one batch; they must run in turn");
      }
      Map<String, Tensor> state;
      if (SequenceSpec.flag(r.parameters(), SequenceSpec.SEQUENCE_START)) {
        state = initial(r);
      } else {
        Held h = held.get(id);
        if (h == null) {
          throw InferenceException.invalid(LOST + "worker " + worker + " holds no state of sequence '" + id
              + "' (the worker restarted since its last request); start it again with sequence_start");
        }
        state = h.tensors;
      }
      ids.add(id);
      fed.add(withState(r, state));
    }
    List<List<Tensor>> results = runner.apply(fed);
    List<List<Tensor>> answers = new ArrayList<>(results.size());
    for (int i = 0; i < batch.size(); i++) {
      InferenceRequest r = batch.get(i);
      Map<String, Tensor> next = new HashMap<>();
      List<Tensor> shown = new ArrayList<>();
      for (Tensor t : results.get(i)) {
        if (stateOutputs.contains(t.name())) {
          next.put(t.name(), t);
        } else {
          shown.add(t);
        }
      }
      String id = ids.get(i);
      if (SequenceSpec.flag(r.parameters(), SequenceSpec.SEQUENCE_END)) {
        held.remove(id);
      } else {
        Map<String, Tensor> state = new HashMap<>();
        for (SequenceSpec.StateSpec s : spec.state()) {
          Tensor out = next.get(s.output());
          if (out == null) {
            throw new InferenceException(InferenceException.Kind.INTERNAL, "model gave no state output '" + s.output() + "'");
          }
          state.put(s.input(), out.withName(s.input()));
        }
        Held h = held.computeIfAbsent(id, k -> new Held());
        h.tensors = state;
        h.usedNanos = now;
      }
      answers.add(shown);
    }
    return answers;
  }

  // The model's declared input order, state included; requested outputs widened by the state outputs.
  private InferenceRequest withState(InferenceRequest r, Map<String, Tensor> state) {
    Map<String, Tensor> given = new HashMap<>();
    r.inputs().forEach(t -> given.put(t.name(), t));
    List<Tensor> inputs = new ArrayList<>(model.inputs().size());
    for (TensorSpec s : model.inputs()) {
      Tensor t = state.containsKey(s.name()) ? state.get(s.name()) : given.remove(s.name());
      if (t != null) {
        inputs.add(t);
      }
    }
    inputs.addAll(given.values());
    List<String> outputs = r.outputs();
    if (!outputs.isEmpty()) {
      outputs = new ArrayList<>(outputs);
      for (String o : stateOutputs) {
        if (!outputs.contains(o)) {
          outputs.add(o);
        }
      }
    }
    return new InferenceRequest(r.id(), inputs, outputs, r.parameters());
  }

  // A -1 dimension of a state takes the request's rows (its batched inputs' first dimension): [2, -1, 128] for
  // Silero VAD starts as [2, 1, 128] beside a one-row chunk.
  private Map<String, Tensor> initial(InferenceRequest r) {
    long rows = 1;
    for (Tensor t : r.inputs()) {
      TensorSpec s = declared(t.name());
      if (s != null && s.batched() && t.shape().length > 0) {
        rows = t.shape()[0];
        break;
      }
    }
    Map<String, Tensor> out = new HashMap<>();
    for (SequenceSpec.StateSpec st : spec.state()) {
      TensorSpec s = declared(st.input());
      long[] shape = s.shape().clone();
      for (int i = 0; i < shape.length; i++) {
        shape[i] = shape[i] < 0 ? rows : shape[i];
      }
      out.put(st.input(), filled(st.input(), s, shape, st.init()));
    }
    return out;
  }

  private TensorSpec declared(String name) {
    for (TensorSpec s : model.inputs()) {
      if (s.name().equals(name)) {
        return s;
      }
    }
    return null;
  }

  static Tensor filled(String name, TensorSpec s, long[] shape, double value) {
    int n = Math.toIntExact(Tensor.elementCount(shape));
    ByteBuffer b = ByteBuffer.allocate(n * s.datatype().byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    if (value != 0) {
      for (int i = 0; i < n; i++) {
        switch (s.datatype()) {
          case FP32 -> b.putFloat((float) value);
          case FP64 -> b.putDouble(value);
          case INT32 -> b.putInt((int) value);
          case INT64 -> b.putLong((long) value);
          default -> throw new IllegalStateException("state type " + s.datatype());
        }
      }
    }
    return new Tensor(name, s.datatype(), shape, b.array());
  }
}
