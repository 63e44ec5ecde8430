package io.kiln.pipelines.impl;

import io.kiln.pools.Cancellation;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.pipelines.CacheEntry;
import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The built-in infer step: reads the input its fetch step cached <em>on this node</em> (pinned while read)
 * and sends it to this node's pool of the deployment (or through a model graph's steps on this node's pools), so the
 * file never leaves the node. If the cache
 * evicted it since, it is fetched again from its source on this node, never copied from another node.
 */
final class InferStep {

  /** Largest cached file an infer step decodes. */
  static final long MAX_INPUT_BYTES = 1L << 30;

  private InferStep() {
  }

  static Map<String, Object> run(StepContextImpl ctx, NodeServices services, StepAction.Infer infer, InferTarget target,
                                 long timeoutMs) throws IOException, InterruptedException {
    if (target == null) {
      throw new StepFailedException("no version of deployment '" + infer.deployment() + "' was resolved");
    }
    StepResult fetched = ctx.result(infer.input()).orElseThrow(() ->
        new StepFailedException("step '" + infer.input() + "' has no result to read"));
    if (!fetched.nodeId().equals(services.nodeId())) {
      // Placement pins this step to the fetch's node; reaching this means that guarantee broke.
      throw new StepFailedException("locality violated: '" + infer.input() + "' cached its input on node "
          + fetched.nodeId() + " but this step runs on node " + services.nodeId());
    }
    NodeCache cache = services.cache();
    String key = fetched.text("key");
    boolean refetched = false;
    NodeCache.Lease lease;
    try {
      lease = cache.open(key);
    } catch (NoSuchFileException evicted) {
      CacheEntry again = cache.fetch(fetched.text("uri"), Math.max(1, fetched.number("bytes")));
      if (!again.sha256().equals(fetched.text("sha256"))) {
        throw new StepFailedException("the input at " + fetched.text("uri") + " changed since step '"
            + infer.input() + "' fetched it (it was evicted from the cache and fetched again)");
      }
      refetched = true;
      lease = cache.open(key);
    }
    List<Tensor> inputs;
    try (NodeCache.Lease l = lease) {
      long size = Files.size(l.path());
      if (size > MAX_INPUT_BYTES) {
        throw new StepFailedException("the input is " + size + " bytes; an infer step decodes at most "
            + MAX_INPUT_BYTES);
      }
      inputs = TensorFiles.decode(Files.readAllBytes(l.path()), infer.format(), infer.tensor(), target.inputs());
    }
    InferenceRequest request = new InferenceRequest(ctx.runId() + "/" + ctx.step(), inputs, List.of(), Map.of());
    Cancellation cancellation = Cancellation.create(); // withdraws the request once the step stops waiting
    RequestContext context = RequestContext.of(request.id(), System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(Math.max(1, timeoutMs)), null, RequestContext.Priority.NORMAL, cancellation);
    // A graph runs its steps on this node's pools (where the input is), as a deployment's request goes to this node's.
    CompletableFuture<InferenceResponse> call = infer.graph()
        ? graphs(ctx, services).infer(context, target.deployment(), services.nodeId(), request)
        : services.pools().infer(context, target.deployment(), target.version(), services.nodeId(), request);
    InferenceResponse response;
    try {
      response = call.get(timeoutMs + 10_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      String message = c.getMessage() == null ? c.toString() : c.getMessage();
      throw new StepFailedException(infer.graph() ? message // names the graph, its step and the node
          : "pool " + target.deployment() + "@" + target.version() + " on node " + services.nodeId() + ": " + message, c);
    } catch (TimeoutException e) {
      cancellation.cancel("the step stopped waiting after " + timeoutMs + " ms");
      throw new StepFailedException((infer.graph() ? "graph " : "pool ") + target.deployment() + " on node "
          + services.nodeId() + " did not answer within " + timeoutMs + " ms");
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put(infer.graph() ? "graph" : "deployment", response.modelName());
    out.put("version", response.modelVersion());
    Object poolNode = response.parameters().get("kiln_node");
    out.put("node", poolNode == null ? services.nodeId() : poolNode.toString());
    out.put("input_key", key);
    out.put("refetched", refetched);
    List<Map<String, Object>> outputs = new ArrayList<>();
    for (Tensor t : response.outputs()) {
      outputs.add(TensorFiles.toResult(t, services.maxOutputElements()));
    }
    out.put("outputs", outputs);
    return out;
  }

  private static io.kiln.pipelines.graphs.Graphs graphs(StepContextImpl ctx, NodeServices services) {
    return ctx.runtime().localService(io.kiln.pipelines.graphs.Graphs.class).orElseThrow(() ->
        new StepFailedException("node " + services.nodeId() + " runs no model graphs"));
  }
}
