package io.kiln.pipelines.impl;

import io.kiln.pipelines.CacheEntry;
import io.kiln.pipelines.CacheGroup;
import io.kiln.pipelines.NodeCache;
import io.kiln.pools.Cancellation;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.runtime.TaskContext;
import io.vertx.core.json.JsonArray;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The runtime task a batch of job inputs is: on the node it was placed on (hard), take one of the node's
 * fetch slots and fetch the inputs the node's cache lacks as one group ({@link NodeCache#fetchAll}: forced to
 * disk together), release the slot, decode each file and send them all to <em>this node's</em> pool at once,
 * so its batcher sees them together. The inputs never leave the node; only the model's outputs travel back
 * to the coordinator, one reply for the batch. Runs on a task worker thread and blocks.
 *
 * <p>Each input succeeds or fails alone: a failure carries its cause as the message's first word
 * ({@code fetch:}, {@code decode:}, {@code infer:}, {@code overloaded:}), which the coordinator counts.
 */
public final class JobTasks {

  /** Largest file a job decodes. */
  static final long MAX_DECODE_BYTES = InferStep.MAX_INPUT_BYTES;

  private JobTasks() {
  }

  public static JobOutcome.Batch runBatch(JobBatch batch) throws InterruptedException {
    TaskContext task = TaskContext.current();
    NodeServices services = task.runtime().localService(NodeServices.class).orElseThrow(() ->
        new StepFailedException("fetch: node " + task.nodeId() + " runs no pipeline services"));
    JobSlots slots = task.runtime().localService(JobSlots.class).orElseGet(() -> JobSlots.of(JobSlots.DEFAULT_SLOTS));
    NodeCache cache = services.cache();
    int n = batch.size();
    List<JobOutcome> done = new ArrayList<>(n);
    List<JobOutcome.Failure> failed = new ArrayList<>();
    long t0 = services.clockMillis().getAsLong();
    CacheEntry[] entries = new CacheEntry[n];
    boolean[] cached = new boolean[n];
    List<Integer> missing = new ArrayList<>();
    for (int k = 0; k < n; k++) {
      entries[k] = cache.get(NodeCache.keyOf(batch.uris().get(k))).orElse(null);
      cached[k] = entries[k] != null;
      if (!cached[k]) {
        missing.add(k);
      }
    }
    List<CompletableFuture<InferenceResponse>> calls = new ArrayList<>(java.util.Collections.nCopies(n, null));
    // The batch's requests share one token: once the batch stops waiting, what its pool still holds is withdrawn.
    Cancellation cancellation = Cancellation.create();
    boolean[] gone = new boolean[n];
    JsonArray reached = new JsonArray();
    long t1;
    // 1. What the cache lacks is downloaded as one group under one fetch slot; the small ones (their bytes kept)
    //    go to the pool at once, while the group is forced to disk and put in the cache.
    try (CacheGroup group = download(slots, cache, batch, missing)) {
      t1 = services.clockMillis().getAsLong();
      for (int m = 0; m < missing.size(); m++) {
        int k = missing.get(m);
        CacheGroup.Item it = group.item(m);
        if (it.error() != null) {
          failed.add(new JobOutcome.Failure(batch.indices().get(k), "fetch: " + it.uri() + ": " + it.error().getMessage()));
          gone[k] = true;
        } else if (it.data() != null) {
          submit(services, batch, k, it.data(), cancellation, calls, failed, gone, reached);
        }
      }
      reached = report(task, batch, reached); // before the commit: the pool has them now
      List<CacheGroup.Item> committed = group.commit();
      for (int m = 0; m < missing.size(); m++) {
        int k = missing.get(m);
        CacheGroup.Item it = committed.get(m);
        if (gone[k]) {
          continue;
        }
        if (it.entry() == null) {
          // Not in the cache after all: the input fails (and is retried), even if its analysis is under way.
          failed.add(new JobOutcome.Failure(batch.indices().get(k), "fetch: " + it.uri() + ": "
              + (it.error() == null ? "not cached" : it.error().getMessage())));
          gone[k] = true;
          calls.set(k, null);
        } else {
          entries[k] = it.entry();
        }
      }
    }
    // 2. The rest (cached before, or too large to keep) read from the cache, decoded and sent to the pool.
    for (int k = 0; k < n; k++) {
      if (gone[k] || calls.get(k) != null) {
        continue;
      }
      byte[] data;
      try {
        data = read(slots, cache, batch, k, entries);
      } catch (StepFailedException e) {
        failed.add(new JobOutcome.Failure(batch.indices().get(k), e.getMessage()));
        gone[k] = true;
        continue;
      }
      submit(services, batch, k, data, cancellation, calls, failed, gone, reached);
    }
    // Tell the coordinator these inputs now wait in (or run on) the pool: how it tells its own requests there
    // from online ones. Fire-and-forget; a lost report only makes a low-priority job less polite.
    report(task, batch, reached);
    // 3. The answers.
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(batch.timeoutMs() + 10_000);
    for (int k = 0; k < n; k++) {
      CompletableFuture<InferenceResponse> call = calls.get(k);
      if (call == null) {
        continue;
      }
      int index = batch.indices().get(k);
      InferenceResponse response;
      try {
        response = call.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        String m = c.getMessage() == null ? c.toString() : c.getMessage();
        failed.add(new JobOutcome.Failure(index, c instanceof CapacityExceededException
            ? "overloaded: pool " + batch.deployment() + " on node " + services.nodeId() + ": " + m
            : "infer: pool " + batch.deployment() + "@" + batch.version() + " on node " + services.nodeId() + ": " + m));
        continue;
      } catch (TimeoutException e) {
        cancellation.cancel("the job's batch did not get its answers within " + batch.timeoutMs() + " ms");
        failed.add(new JobOutcome.Failure(index, "infer: pool " + batch.deployment() + " on node "
            + services.nodeId() + " did not answer within " + batch.timeoutMs() + " ms"));
        continue;
      }
      long t2 = services.clockMillis().getAsLong();
      Object poolNode = response.parameters().get("kiln_node");
      List<Map<String, Object>> outputs = new ArrayList<>();
      for (Tensor t : response.outputs()) {
        outputs.add(TensorFiles.toResult(t, services.maxOutputElements()));
      }
      CacheEntry entry = entries[k];
      done.add(new JobOutcome(index, entry.key(), batch.uris().get(k), entry.nodeId(),
          poolNode == null ? services.nodeId() : poolNode.toString(), entry.sha256(), entry.bytes(), cached[k],
          t1 - t0, t2 - t1, outputs));
    }
    return new JobOutcome.Batch(done, failed);
  }

  /** Tells the coordinator which inputs reached the pool; answers a fresh list for the next ones. */
  private static JsonArray report(TaskContext task, JobBatch batch, JsonArray reached) {
    if (!reached.isEmpty()) {
      task.runtime().vertx().eventBus().send(JobBatch.PHASE_ADDRESS + batch.jobId(), reached);
    }
    return new JsonArray();
  }

  /** Inputs kept in memory between their download and their analysis when at most this large. */
  static final int KEEP_BYTES = 1 << 20;

  /** Decodes input {@code k} and sends it to this node's pool; a decode failure fails it alone. */
  private static void submit(NodeServices services, JobBatch batch, int k, byte[] data, Cancellation cancellation,
                             List<CompletableFuture<InferenceResponse>> calls, List<JobOutcome.Failure> failed,
                             boolean[] gone, JsonArray reached) {
    List<Tensor> inputs;
    try {
      if (data.length > MAX_DECODE_BYTES) {
        throw new StepFailedException("decode: the input is " + data.length + " bytes; a job decodes at most "
            + MAX_DECODE_BYTES);
      }
      inputs = TensorFiles.decode(data, batch.format(), batch.tensor(), batch.inputs());
    } catch (StepFailedException e) {
      failed.add(new JobOutcome.Failure(batch.indices().get(k), e.getMessage()));
      gone[k] = true;
      return;
    } catch (RuntimeException e) {
      failed.add(new JobOutcome.Failure(batch.indices().get(k), "decode: " + batch.uris().get(k) + ": " + e.getMessage()));
      gone[k] = true;
      return;
    }
    InferenceRequest request = new InferenceRequest(batch.jobId() + "/" + NodeCache.keyOf(batch.uris().get(k))
        .substring(0, 16), inputs, List.of(), Map.of());
    RequestContext context = RequestContext.of(request.id(), System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(Math.max(1, batch.timeoutMs())), null,
        batch.low() ? RequestContext.Priority.LOW : RequestContext.Priority.NORMAL, cancellation);
    calls.set(k, services.pools().infer(context, batch.deployment(), batch.version(), services.nodeId(), request));
    reached.add(batch.indices().get(k));
  }

  /** Downloads {@code which} of the batch's inputs as one group, holding one fetch slot while it does. */
  private static CacheGroup download(JobSlots slots, NodeCache cache, JobBatch batch, List<Integer> which)
      throws InterruptedException {
    List<String> uris = which.stream().map(batch.uris()::get).toList();
    if (uris.isEmpty()) {
      return cache.download(uris, batch.maxBytes(), KEEP_BYTES);
    }
    if (!slots.fetch().tryAcquire(batch.timeoutMs(), TimeUnit.MILLISECONDS)) {
      throw new StepFailedException("fetch: no fetch slot free on node " + cache.nodeId() + " within "
          + batch.timeoutMs() + " ms");
    }
    try {
      return cache.download(uris, batch.maxBytes(), KEEP_BYTES);
    } finally {
      slots.fetch().release();
    }
  }

  /** Input {@code k}'s bytes from the cache; fetched again (on this node) if evicted since. */
  private static byte[] read(JobSlots slots, NodeCache cache, JobBatch batch, int k, CacheEntry[] entries)
      throws InterruptedException {
    String uri = batch.uris().get(k);
    try {
      return read(cache, entries[k].key());
    } catch (NoSuchFileException evicted) {
      CacheGroup.Item again;
      try (CacheGroup one = download(slots, cache, batch, List.of(k))) {
        again = one.commit().get(0);
      }
      if (again.entry() == null) {
        throw new StepFailedException("fetch: " + uri + ": " + again.error().getMessage());
      }
      entries[k] = again.entry();
      try {
        return read(cache, entries[k].key());
      } catch (IOException e) {
        throw new StepFailedException("fetch: " + uri + " could not be read from the cache: " + e.getMessage());
      }
    } catch (IOException e) {
      throw new StepFailedException("fetch: " + uri + " could not be read from the cache: " + e.getMessage());
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
