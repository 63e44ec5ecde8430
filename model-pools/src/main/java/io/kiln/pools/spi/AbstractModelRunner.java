package io.kiln.pools.spi;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The engine-independent part of a runner, the base an engine's runner extends: stacks the inputs of validated
 * requests into one batch, calls {@link #forward} once, checks the outputs against the spec (a contradiction is a
 * {@link SpecMismatchException}) and splits them back per request. Subclasses only run the model ({@link #forward})
 * and free it ({@link #release}, called once no call runs, through an {@link EngineGuard}). Not thread-safe, like
 * every {@link ModelRunner}: the worker's thread calls it.
 */
public abstract class AbstractModelRunner implements ModelRunner {

  /** The most bytes one stacked tensor may hold (its elements are indexed by an int). */
  public static final long MAX_TENSOR_BYTES = RowStacker.MAX_TENSOR_BYTES;

  private final ModelSpec spec;
  private final List<TensorSpec> outputSpecs;
  private final BatchLayout layout;
  private ModelLoadInfo loadInfo;
  // Every batch runs through it, and release() only once none runs: native memory freed under a call crashes the JVM.
  private final io.kiln.pools.spi.EngineGuard guard;

  /**
   * @param outputSpecs the outputs the model returns, in order (the spec's, or for built-ins that declare
   *     none, what they return)
   */
  protected AbstractModelRunner(ModelSpec spec, List<TensorSpec> outputSpecs) {
    this.spec = spec;
    this.outputSpecs = List.copyOf(outputSpecs);
    this.layout = new BatchLayout(spec.inputs(), this.outputSpecs);
    this.guard = new io.kiln.pools.spi.EngineGuard("the model runner of " + spec.uri());
  }

  /**
   * Runs the model once.
   *
   * @param inputs one tensor per spec input, in spec order: a batched input stacked (first dimension = total rows),
   *     any other (a scalar, a fixed first dimension) as the requests gave it
   * @return the model's outputs in order; names are ignored (the spec names them)
   * @throws ModelExecutionException or another runtime exception when the engine fails
   */
  protected abstract List<Tensor> forward(List<Tensor> inputs);

  /** Frees the engine's resources; called once. */
  protected abstract void release();

  @Override
  public final ModelSpec spec() {
    return spec;
  }

  @Override
  public final ModelLoadInfo loadInfo() {
    if (loadInfo == null) {
      throw new IllegalStateException("the model has not finished loading");
    }
    return loadInfo;
  }

  /**
   * Whether the runner can run another batch after one failed: the loader asks when a warm-up batch fails, and
   * serves a runner that can (the model only rejected that input). True unless closed; a runner whose engine can
   * break for good (a Python model's process that died) says so. Called on the worker's thread.
   */
  public boolean usable() {
    return !guard.closed();
  }

  /** Set once by Kiln's loader after warm-up; an engine never calls it. */
  public final void loaded(ModelLoadInfo info) {
    this.loadInfo = info;
  }

  @Override
  public final List<List<Tensor>> infer(List<InferenceRequest> batch) {
    return guard.run(() -> inferBatch(batch));
  }

  private List<List<Tensor>> inferBatch(List<InferenceRequest> batch) {
    if (batch.isEmpty()) {
      return List.of();
    }
    List<List<Tensor>> ordered = new ArrayList<>(batch.size());
    long[] rows = new long[batch.size()];
    long totalRows = 0;
    for (int r = 0; r < batch.size(); r++) {
      List<Tensor> inputs = layout.ordered(batch.get(r));
      ordered.add(inputs);
      rows[r] = layout.rows(inputs);
      totalRows += rows[r];
    }
    if (!layout.oneCall(ordered)) {
      // Inputs passed whole that differ, or outputs that are not per row: each request is its own call.
      List<List<Tensor>> results = new ArrayList<>(batch.size());
      for (int r = 0; r < batch.size(); r++) {
        List<Tensor> outputs = forwardRows(List.of(ordered.get(r)), rows[r]);
        checkOutputs(outputs, rows[r]);
        results.add(picked(batch.get(r), outputs));
      }
      return results;
    }
    layout.checkStackable(batch, ordered);

    List<Tensor> outputs = forwardRows(ordered, totalRows);
    checkOutputs(outputs, totalRows);
    if (batch.size() == 1) {
      return List.of(picked(batch.get(0), outputs));
    }

    List<List<Tensor>> results = new ArrayList<>(batch.size());
    long from = 0;
    for (int r = 0; r < batch.size(); r++) {
      int[] picked = layout.selectedOutputs(batch.get(r));
      List<Tensor> mine = new ArrayList<>(picked.length);
      for (int o : picked) {
        mine.add(RowStacker.slice(outputs.get(o), totalRows, from, rows[r], outputSpecs.get(o).name()));
      }
      results.add(List.copyOf(mine));
      from += rows[r];
    }
    return results;
  }

  /**
   * Runs the model once over a batch: {@code ordered} holds each request's inputs in spec order, checked to stack
   * (same datatype and non-batch dimensions per batched input, equal inputs passed whole), {@code totalRows} rows in
   * all. By default stacks each batched input's parts into one tensor ({@link RowStacker}), passes the others once
   * (the first request's), and calls {@link #forward}; an engine that can gather the rows straight into its own input
   * memory overrides it to skip that copy.
   */
  protected List<Tensor> forwardRows(List<List<Tensor>> ordered, long totalRows) {
    List<Tensor> stacked = new ArrayList<>(spec.inputs().size());
    for (int i = 0; i < spec.inputs().size(); i++) {
      stacked.add(layout.batched(i) ? RowStacker.stack(spec.inputs().get(i).name(), parts(ordered, i))
          : ordered.get(0).get(i));
    }
    return forward(stacked);
  }

  /** Input {@code i} of each request of {@code ordered}, in request order. */
  protected static List<Tensor> parts(List<List<Tensor>> ordered, int i) {
    List<Tensor> parts = new ArrayList<>(ordered.size());
    for (List<Tensor> request : ordered) {
      parts.add(request.get(i));
    }
    return parts;
  }

  /** A streaming runner's view of one request: its inputs in spec order, checked as a batch of one. */
  protected final List<Tensor> streamInputs(InferenceRequest request) {
    if (guard.closed()) {
      throw new IllegalStateException("the model runner is closed");
    }
    List<Tensor> inputs = layout.ordered(request);
    layout.checkStackable(List.of(request), List.of(inputs));
    return inputs;
  }

  /**
   * One chunk of a streaming runner's answer to {@code request}: the model's outputs for the request's rows,
   * checked against the spec as {@link #infer} checks a batch's, named per spec and picked as the request asked.
   *
   * @throws ModelExecutionException when the outputs do not fit the spec
   */
  protected final List<Tensor> chunkOutputs(InferenceRequest request, List<Tensor> outputs) {
    checkOutputs(outputs, layout.rows(layout.ordered(request)));
    return picked(request, outputs);
  }

  /** The outputs of a call that was the request's alone, named per spec and picked as the request asked. */
  private List<Tensor> picked(InferenceRequest request, List<Tensor> outputs) {
    int[] picked = layout.selectedOutputs(request);
    List<Tensor> mine = new ArrayList<>(picked.length);
    for (int o : picked) {
      Tensor t = outputs.get(o);
      String name = outputSpecs.get(o).name();
      mine.add(t.name().equals(name) ? t : t.withName(name));
    }
    return List.copyOf(mine);
  }

  /**
   * The outputs fit the spec: datatype, rank, every fixed dimension, and for a batched output of a model with a
   * batched input, the rows of the call.
   */
  private void checkOutputs(List<Tensor> outputs, long totalRows) {
    if (outputs.size() != outputSpecs.size()) {
      throw new SpecMismatchException("the model returned " + outputs.size() + " outputs, the spec declares "
          + outputSpecs.size() + " " + outputSpecs);
    }
    boolean rowsKnown = layout.hasBatchedInput();
    for (int o = 0; o < outputs.size(); o++) {
      Tensor out = outputs.get(o);
      TensorSpec declared = outputSpecs.get(o);
      long[] shape = out.shape();
      long[] want = declared.shape();
      boolean fits = out.datatype() == declared.datatype() && shape.length == want.length
          && (!rowsKnown || !declared.batched() || shape[0] == totalRows);
      for (int d = 0; fits && d < shape.length; d++) {
        fits = want[d] == -1 || want[d] == shape[d];
      }
      if (!fits) {
        throw new SpecMismatchException("model output " + o + " is " + out.datatype() + Arrays.toString(shape)
            + " for " + totalRows + " input rows, but the spec declares " + declared);
      }
    }
  }

  /**
   * Frees the engine once no batch runs ({@link io.kiln.pools.spi.EngineGuard}: a batch running on another thread is
   * waited for; one still running after the wait keeps the engine open rather than have it freed under it). Later
   * batches are refused.
   */
  @Override
  public final void close() {
    if (releasesUnderACall()) {
      guard.closeNow(this::release);
    } else {
      guard.close(this::release);
    }
  }

  /**
   * Whether {@link #release} may run while a batch runs on another thread, and should, to end it: true for an engine
   * in a process of its own (killing it fails the call at once); false (the default) for native memory in this one.
   */
  protected boolean releasesUnderACall() {
    return false;
  }
}
