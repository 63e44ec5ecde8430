package io.kiln.pipelines.graphs;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolClient;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.runtime.Futures;
import io.kiln.serve.GraphSpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One graph request on its way through the steps: each step is one request to its deployment's pool on the chosen
 * node, sent when the step before it answered, in the request's own context (its deadline, trace, priority and
 * cancellation token: cancelling the graph request withdraws the step in flight from its pool). A step that fails
 * fails the request with the failure's kind, naming the step. Not thread-safe: steps run one at a time, each
 * continuing on the thread that completed the step before.
 */
final class GraphRun {

  /** What a request needs of its graph, made once per spec: the outputs each step's pool is asked for. */
  record Plan(GraphSpec spec, List<List<String>> outputs, io.kiln.pools.RequestValidator validator) {

    static Plan of(GraphSpec spec) {
      Map<String, java.util.Set<String>> read = spec.outputsRead();
      List<List<String>> outputs = new ArrayList<>();
      spec.steps().forEach(s -> outputs.add(List.copyOf(read.get(s.name()))));
      return new Plan(spec, outputs, new io.kiln.pools.RequestValidator(spec.name(), spec.signature(), 0));
    }
  }

  private final Plan plan;
  private final RequestContext context;
  private final InferenceRequest request;
  private final String node;
  private final Map<String, String> versions;
  private final PoolClient pools;
  private final GraphMeters meters;
  private final CompletableFuture<InferenceResponse> result = new CompletableFuture<>();
  /** Tensors by source ({@code input.NAME}, {@code STEP.OUTPUT}). */
  private final Map<String, Tensor> values = new HashMap<>();
  private final long started = System.nanoTime();

  GraphRun(Plan plan, RequestContext context, InferenceRequest request, String node, Map<String, String> versions,
           PoolClient pools, GraphMeters meters) {
    this.plan = plan;
    this.context = context;
    this.request = request;
    this.node = node;
    this.versions = versions;
    this.pools = pools;
    this.meters = meters;
  }

  CompletableFuture<InferenceResponse> start() {
    meters.started();
    for (Tensor t : request.inputs()) {
      values.put(GraphSpec.REQUEST + "." + t.name(), t);
    }
    step(0);
    return result;
  }

  private void step(int i) {
    GraphSpec graph = plan.spec();
    if (i == graph.steps().size()) {
      answer();
      return;
    }
    GraphSpec.Step step = graph.steps().get(i);
    String version = versions.get(step.deployment());
    if (context.cancellation().isCancelled()) {
      fail(new InferenceException(InferenceException.Kind.UNAVAILABLE, "graph '" + graph.name()
          + "' was cancelled before step '" + step.name() + "': " + context.cancellation().reason()), "cancelled");
      return;
    }
    if (context.expired(System.nanoTime())) {
      fail(InferenceException.deadlineExceeded("graph '" + graph.name() + "': the deadline passed before step '"
          + step.name() + "'"), null);
      return;
    }
    List<Tensor> inputs = new ArrayList<>(step.inputMap().size());
    try {
      step.inputMap().forEach((input, source) -> inputs.add(tensor(source, input)));
    } catch (InferenceException e) {
      fail(new InferenceException(e.kind(), describe(step, version) + e.getMessage(), e), null);
      return;
    }
    String id = (context.requestId().isEmpty() ? graph.name() : context.requestId()) + "/" + step.name();
    RequestContext stepContext = RequestContext.of(id, context.deadlineNanos(), context.trace(), context.priority(),
        context.cancellation());
    long sent = System.nanoTime();
    CompletableFuture<InferenceResponse> call;
    try {
      call = pools.infer(stepContext, step.deployment(), version, node,
          new InferenceRequest(id, inputs, plan.outputs().get(i), Map.of()));
    } catch (RuntimeException e) {
      stepFailed(step, version, e);
      return;
    }
    call.whenComplete((response, error) -> {
      meters.step(step.name(), step.deployment(), System.nanoTime() - sent);
      if (error != null || response == null) {
        stepFailed(step, version, error != null ? error : new IllegalStateException("the pool answered nothing"));
        return;
      }
      for (Tensor t : response.outputs()) {
        values.put(step.name() + "." + t.name(), t);
      }
      step(i + 1);
    });
  }

  /** The tensor a source names, as the input {@code name}. */
  private Tensor tensor(GraphSpec.Source source, String name) {
    Tensor t = values.get(source.step() + "." + source.tensor());
    if (t == null) {
      throw new InferenceException(InferenceException.Kind.INTERNAL, source.request()
          ? "the request has no input '" + source.tensor() + "'"
          : "step '" + source.step() + "' answered no output '" + source.tensor() + "'");
    }
    return source.row() >= 0 ? Rows.select(t, source.row(), name, source.step() + "." + source.tensor())
        : t.name().equals(name) ? t : t.withName(name);
  }

  private void answer() {
    GraphSpec graph = plan.spec();
    List<Tensor> outputs = new ArrayList<>();
    try {
      for (GraphSpec.Output o : graph.outputs()) {
        if (request.outputs().isEmpty() || request.outputs().contains(o.name())) {
          outputs.add(tensor(o.from(), o.name()));
        }
      }
    } catch (InferenceException e) {
      fail(new InferenceException(e.kind(), "graph '" + graph.name() + "': " + e.getMessage(), e), null);
      return;
    }
    meters.ended("ok", System.nanoTime() - started);
    result.complete(new InferenceResponse(request.id(), graph.name(), graph.version(), outputs,
        Map.of("kiln_node", node)));
  }

  private void stepFailed(GraphSpec.Step step, String version, Throwable error) {
    Throwable cause = Futures.unwrap(error);
    String message = describe(step, version) + (cause.getMessage() == null ? cause.toString() : cause.getMessage());
    InferenceException failure;
    if (cause instanceof CapacityExceededException full) {
      failure = new CapacityExceededException(message, full.retryAfter());
    } else {
      failure = new InferenceException(cause instanceof InferenceException ie ? ie.kind()
          : InferenceException.Kind.INTERNAL, message, cause);
    }
    fail(failure, context.cancellation().isCancelled() ? "cancelled" : null);
  }

  private String describe(GraphSpec.Step step, String version) {
    return "graph '" + plan.spec().name() + "' step '" + step.name() + "' (" + step.deployment() + "@" + version
        + " on node " + node + "): ";
  }

  private void fail(InferenceException e, String outcome) {
    meters.ended(outcome != null ? outcome : e.kind().name().toLowerCase(java.util.Locale.ROOT),
        System.nanoTime() - started);
    result.completeExceptionally(e);
  }
}
