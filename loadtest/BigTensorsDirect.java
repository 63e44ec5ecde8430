import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The direct side of loadtest/bench-big-tensors.sh: one ONNX Runtime session opened as Kiln's worker opens it (all
 * optimisations, INTRA intra-op threads, 1 inter-op), called by C threads in a closed loop, each call's output copied
 * into a Java array as the worker does (getByteBuffer). Prints one JSON line: requests/s and latency percentiles of
 * the measured window. A source-file program (java -cp onnxruntime.jar BigTensorsDirect.java ...): no build step.
 * With SERIAL (the default) the callers take turns on the session, as requests queue for Kiln's one worker: the same
 * session, the same threads, one run at a time; with PARALLEL their runs overlap on the session.
 *
 * <p>Usage: BigTensorsDirect MODEL INTRA CONCURRENCY WARMUP_S DURATION_S [SERIAL|PARALLEL [SHAPE]], SHAPE the input's
 * dimensions joined by x (default 8x3x48x320, PP-OCRv4 rec's crop batch; det takes e.g. 1x3x480x480)
 */
public final class BigTensorsDirect {

  private static byte call(OrtSession session, String input, OnnxTensor x) throws Exception {
    try (OrtSession.Result r = session.run(Map.of(input, x))) {
      ByteBuffer out = ((OnnxTensor) r.get(0)).getByteBuffer();
      byte[] copy = new byte[out.remaining()];
      out.get(copy);
      return copy[copy.length - 1];
    }
  }

  public static void main(String[] args) throws Exception {
    String model = args[0];
    int intra = Integer.parseInt(args[1]);
    int concurrency = Integer.parseInt(args[2]);
    double warmup = Double.parseDouble(args[3]);
    double duration = Double.parseDouble(args[4]);
    boolean serial = args.length <= 5 || !args[5].equals("PARALLEL");
    long[] shape = java.util.Arrays.stream((args.length > 6 ? args[6] : "8x3x48x320").split("x"))
        .mapToLong(Long::parseLong).toArray();
    Object turn = new Object();
    int elements = Math.toIntExact(java.util.Arrays.stream(shape).reduce(1, (a, b) -> a * b));
    OrtEnvironment env = OrtEnvironment.getEnvironment();
    OrtSession.SessionOptions o = new OrtSession.SessionOptions();
    o.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
    o.setIntraOpNumThreads(intra);
    o.setInterOpNumThreads(1);
    OrtSession session = env.createSession(model, o);
    String input = session.getInputNames().iterator().next();
    Random random = new Random(36);
    ByteBuffer data = ByteBuffer.allocateDirect(elements * 4).order(ByteOrder.nativeOrder());
    for (int i = 0; i < elements; i++) {
      data.putFloat((float) Math.sin(i * 0.001) * 0.8f + (random.nextFloat() - 0.5f) * 0.4f);
    }
    data.flip();
    long start = System.nanoTime();
    long measureFrom = start + (long) (warmup * 1e9);
    long end = measureFrom + (long) (duration * 1e9);
    List<Long> latencies = Collections.synchronizedList(new ArrayList<>());
    AtomicBoolean failed = new AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < concurrency; t++) {
      Thread th = new Thread(() -> {
        try (OnnxTensor x = OnnxTensor.createTensor(env, data.duplicate().order(ByteOrder.nativeOrder()).asFloatBuffer(),
            shape)) {
          long bytes = 0;
          while (true) {
            long t0 = System.nanoTime();
            if (t0 >= end) {
              break;
            }
            if (serial) {
              synchronized (turn) {
                bytes += call(session, input, x);
              }
            } else {
              bytes += call(session, input, x);
            }
            long t1 = System.nanoTime();
            if (t0 >= measureFrom && t1 <= end) {
              latencies.add(t1 - t0);
            }
          }
          if (bytes == Long.MIN_VALUE) {
            System.err.println("unreachable");
          }
        } catch (Exception e) {
          failed.set(true);
          e.printStackTrace();
        }
      });
      th.start();
      threads.add(th);
    }
    // The process's CPU time over the measured window: the cost of a call on every thread, including ONNX Runtime's.
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    long wait = measureFrom - System.nanoTime();
    if (wait > 0) {
      Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
    }
    long cpu0 = os.getProcessCpuTime();
    for (Thread th : threads) {
      th.join();
    }
    long cpu1 = os.getProcessCpuTime();
    List<Long> l = new ArrayList<>(latencies);
    Collections.sort(l);
    double p50 = l.isEmpty() ? 0 : l.get(l.size() / 2) / 1e6;
    double p99 = l.isEmpty() ? 0 : l.get(Math.min(l.size() - 1, (int) (l.size() * 0.99))) / 1e6;
    System.out.printf(java.util.Locale.ROOT, "{\"rps\": %.3f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"n\": %d,"
        + " \"errors\": %d, \"cpu_ms_per_request\": %.2f}%n", l.size() / duration, p50, p99, l.size(),
        failed.get() ? 1 : 0, l.isEmpty() ? 0 : (cpu1 - cpu0) / 1e6 / l.size());
    session.close();
    o.close();
  }
}
