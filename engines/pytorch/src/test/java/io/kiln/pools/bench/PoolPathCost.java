package io.kiln.pools.bench;

import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.pools.WorkerState;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the pool side of a request costs: an in-process node with one pool (the MLP of {@code models/mlp} or
 * {@code builtin:identity}; 2 single-threaded workers, batches of up to 8, no batch delay, as
 * {@code deploy/examples/bench/tiny.yaml}), {@code --concurrency} requests in flight from one caller thread through
 * {@link PoolClient}, for {@code --seconds} after as long a warm-up. Prints the process's CPU time per request
 * (utime+stime of every thread: caller, manager, workers, GC, JIT), the bytes allocated per request (all threads)
 * and the mean batch: figures that a busy machine disturbs less than a rate does. Pin it (e.g. {@code taskset -c 1})
 * to see the pool at one core. No HTTP and no JSON: the gateway's part is measured elsewhere.
 *
 * <p>{@code java -cp ... io.kiln.pools.bench.PoolPathCost [--model mlp|identity] [--seconds 10] [--concurrency 16]}
 */
public final class PoolPathCost {

  public static void main(String[] args) throws Exception {
    String modelName = "mlp";
    double seconds = 10;
    int concurrency = 16;
    for (int i = 0; i < args.length; i += 2) {
      switch (args[i]) {
        case "--model" -> modelName = args[i + 1];
        case "--seconds" -> seconds = Double.parseDouble(args[i + 1]);
        case "--concurrency" -> concurrency = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    ModelSpec model = modelName.equals("identity")
        ? ModelSpec.builder().uri("builtin:identity").engine("Builtin").input("input", DataType.FP32, -1, 64)
            .warmupBatchSizes(List.of(1, 8)).intraOpThreads(1).interOpThreads(1).build()
        : ModelSpec.builder().uri(Path.of("models/mlp").toAbsolutePath().toString()).engine("PyTorch")
            .format("torchscript").input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 10)
            .warmupBatchSizes(List.of(1, 8)).intraOpThreads(1).interOpThreads(1).build();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    KilnRuntime rt = LocalCluster.singleNode(new NodeOptions("bench", "127.0.0.1", Resources.cpu(64), Map.of()))
        .toCompletableFuture().get();
    rt.registerLocalService(MeterRegistry.class, registry);
    try {
      PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ZERO).maxQueued(1024).build();
      ActorHandle<PoolManager> m = PoolManager.getOrCreate(rt, new PoolSpec("cost", "1", rt.nodeId(), model, config, 2,
          Resources.cpu(1), 0)).toCompletableFuture().get();
      await().atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(50)).until(() ->
          m.call(PoolManager::status).toCompletableFuture().get().count(WorkerState.READY) == 2);
      PoolClient client = new PoolClient(rt);
      InferenceRequest request = request();
      run(client, rt, request, concurrency, seconds, registry, null);
      run(client, rt, request, concurrency, seconds, registry, modelName);
    } finally {
      rt.close();
    }
  }

  private static void run(PoolClient client, KilnRuntime rt, InferenceRequest request, int concurrency, double seconds,
                          SimpleMeterRegistry registry, String label) throws InterruptedException {
    DistributionSummary batches = registry.find("kiln.pool.batch.size").summary();
    long batchCount0 = batches == null ? 0 : batches.count();
    double rows0 = batches == null ? 0 : batches.totalAmount();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpu0 = os.getProcessCpuTime();
    long alloc0 = allocated();
    Semaphore inFlight = new Semaphore(concurrency);
    AtomicLong done = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    while (System.nanoTime() < end) {
      inFlight.acquire();
      CompletableFuture<?> f = client.infer(RequestContext.within("", 30_000), "cost", "1", rt.nodeId(), request)
          .toCompletableFuture();
      f.whenComplete((r, e) -> {
        if (e != null) {
          errors.incrementAndGet();
        }
        done.incrementAndGet();
        inFlight.release();
      });
    }
    inFlight.acquire(concurrency);
    long cpu = os.getProcessCpuTime() - cpu0;
    long alloc = allocated() - alloc0;
    if (label != null) {
      batches = registry.find("kiln.pool.batch.size").summary();
      long n = done.get();
      System.out.printf(Locale.ROOT, "%s c%d: %d requests (%.0f/s), %.1f us CPU/request, %.0f B/request, mean batch %.2f,"
              + " errors %d%n", label, concurrency, n, n / seconds, cpu / 1e3 / n, (double) alloc / n,
          (batches.totalAmount() - rows0) / Math.max(1, batches.count() - batchCount0), errors.get());
    }
  }

  private static long allocated() {
    com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long b : t.getThreadAllocatedBytes(t.getAllThreadIds())) {
      sum += Math.max(0, b);
    }
    return sum;
  }

  private static InferenceRequest request() {
    ByteBuffer b = ByteBuffer.allocate(64 * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 64; i++) {
      b.putFloat((i % 17) / 17f - 0.5f);
    }
    return InferenceRequest.of(new Tensor("input", DataType.FP32, new long[] {1, 64}, b.array()));
  }
}
