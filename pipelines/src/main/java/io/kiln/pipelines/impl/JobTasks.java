package io.kiln.pipelines.impl;

import io.kiln.pipelines.CacheEntry;
import io.kiln.pipelines.NodeCache;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.kiln.runtime.TaskContext;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The runtime task one job input is: on the node it was placed on (hard), take one of the node's fetch
 * slots and fetch the input into the node's cache (or find it there), release the slot, decode the file and
 * send it to <em>this node's</em> pool. The input never leaves the node; only the model's outputs travel
 * back to the coordinator. Runs on a task worker thread and blocks.
 *
 * <p>Failures carry their cause as the message's first word ({@code fetch:}, {@code decode:},
 * {@code infer:}, {@code overloaded:}), which the coordinator counts.
 */
public final class JobTasks {

  /** Largest file a job decodes. */
  static final long MAX_DECODE_BYTES = InferStep.MAX_INPUT_BYTES;

  private JobTasks() {
  }

  public static JobOutcome run(JobItem item) throws InterruptedException {
    TaskContext task = TaskContext.current();
    NodeServices services = task.runtime().localService(NodeServices.class).orElseThrow(() ->
        new StepFailedException("fetch: node " + task.nodeId() + " runs no pipeline services"));
    JobSlots slots = task.runtime().localService(JobSlots.class).orElseGet(() -> JobSlots.of(JobSlots.DEFAULT_SLOTS));
    NodeCache cache = services.cache();
    String key = NodeCache.keyOf(item.uri());
    long t0 = services.clockMillis().getAsLong();
    boolean cached = cache.get(key).isPresent();
    CacheEntry entry = cached ? cache.get(key).orElse(null) : null;
    if (entry == null) {
      cached = false;
      entry = fetch(slots, cache, item);
    }
    long t1 = services.clockMillis().getAsLong();
    byte[] data;
    try {
      data = read(cache, key);
    } catch (NoSuchFileException evicted) {
      entry = fetch(slots, cache, item); // evicted between fetch and read: again, on this node
      try {
        data = read(cache, key);
      } catch (IOException e) {
        throw new StepFailedException("fetch: " + item.uri() + " could not be read from the cache: " + e.getMessage());
      }
    } catch (IOException e) {
      throw new StepFailedException("fetch: " + item.uri() + " could not be read from the cache: " + e.getMessage());
    }
    List<Tensor> inputs;
    try {
      inputs = TensorFiles.decode(data, item.format(), item.tensor(), item.inputs());
    } catch (RuntimeException e) {
      throw new StepFailedException("decode: " + item.uri() + ": " + e.getMessage());
    }
    data = null; // the tensors hold the values now
    // Tell the coordinator this input now waits in (or runs on) the pool: how it tells its own requests there
    // from online ones. Fire-and-forget; a lost report only makes a low-priority job less polite.
    task.runtime().vertx().eventBus().send(JobItem.PHASE_ADDRESS + item.jobId(), item.index());
    InferenceRequest request = new InferenceRequest(item.jobId() + "/" + key.substring(0, 16), inputs, List.of(),
        Map.of());
    CompletableFuture<InferenceResponse> call = services.pools().infer(item.deployment(), item.version(),
        services.nodeId(), request, Duration.ofMillis(item.timeoutMs()));
    InferenceResponse response;
    try {
      response = call.get(item.timeoutMs() + 10_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      String m = c.getMessage() == null ? c.toString() : c.getMessage();
      if (c instanceof CapacityExceededException) {
        throw new StepFailedException("overloaded: pool " + item.deployment() + " on node " + services.nodeId() + ": " + m);
      }
      throw new StepFailedException("infer: pool " + item.deployment() + "@" + item.version() + " on node "
          + services.nodeId() + ": " + m);
    } catch (TimeoutException e) {
      call.cancel(true);
      throw new StepFailedException("infer: pool " + item.deployment() + " on node " + services.nodeId()
          + " did not answer within " + item.timeoutMs() + " ms");
    }
    long t2 = services.clockMillis().getAsLong();
    Object poolNode = response.parameters().get("kiln_node");
    List<Map<String, Object>> outputs = new ArrayList<>();
    for (Tensor t : response.outputs()) {
      outputs.add(TensorFiles.toResult(t, services.maxOutputElements()));
    }
    return new JobOutcome(key, item.uri(), entry.nodeId(), poolNode == null ? services.nodeId() : poolNode.toString(),
        entry.sha256(), entry.bytes(), cached, t1 - t0, t2 - t1, outputs);
  }

  private static CacheEntry fetch(JobSlots slots, NodeCache cache, JobItem item) throws InterruptedException {
    if (!slots.fetch().tryAcquire(item.timeoutMs(), TimeUnit.MILLISECONDS)) {
      throw new StepFailedException("fetch: no fetch slot free on node " + cache.nodeId() + " within "
          + item.timeoutMs() + " ms");
    }
    try {
      return cache.fetch(item.uri(), item.maxBytes());
    } catch (IOException | RuntimeException e) {
      throw new StepFailedException("fetch: " + item.uri() + ": " + e.getMessage());
    } finally {
      slots.fetch().release();
    }
  }

  private static byte[] read(NodeCache cache, String key) throws IOException {
    try (NodeCache.Lease lease = cache.open(key)) {
      long size = Files.size(lease.path());
      if (size > MAX_DECODE_BYTES) {
        throw new StepFailedException("decode: the input is " + size + " bytes; a job decodes at most "
            + MAX_DECODE_BYTES);
      }
      return Files.readAllBytes(lease.path());
    }
  }
}
