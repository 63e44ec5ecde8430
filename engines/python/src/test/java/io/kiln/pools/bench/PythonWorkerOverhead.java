package io.kiln.pools.bench;

import io.kiln.engines.builtin.impl.BuiltinModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.pools.testsupport.PythonTests;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a batch costs through a Python worker compared with a DJL worker, for the same MLP (64 → 256 → 10),
 * as {@link ModelRunner#infer} calls on one thread: {@code djl} (TorchScript {@code models/mlp} on DJL's
 * PyTorch), {@code onnx} (the same weights, {@code models/mlp-onnx}, on ONNX Runtime), {@code python} (the
 * numpy {@code deploy/examples/python}), {@code python-echo} (a Python model
 * returning its input: the pipe round trip and framing without compute) and {@code builtin} (Kiln's own
 * checks, stacking and splitting, no engine). Each batch is {@code batch} one-row requests. Calls alternate
 * between the runners so that all see the same machine load; medians (and p90) of many warmed calls, in
 * µs per batch. Also prints the numpy forward pass alone, timed inside Python. Numbers only.
 *
 * <p>Usage: {@code PythonWorkerOverhead [--batches 1,8] [--calls N] [--warmup N]} (defaults 1,8, 5000, 1000);
 * run it with {@code loadtest/bench-python.sh}. One intra-op thread everywhere.
 */
public final class PythonWorkerOverhead {

  private PythonWorkerOverhead() {
  }

  public static void main(String[] args) throws Exception {
    List<Integer> batches = List.of(1, 8);
    int calls = 5000;
    int warmup = 1000;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--batches" -> batches = Arrays.stream(args[++i].split(",")).map(Integer::valueOf).toList();
        case "--calls" -> calls = Integer.parseInt(args[++i]);
        case "--warmup" -> warmup = Integer.parseInt(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument '" + args[i]
            + "'; usage: PythonWorkerOverhead [--batches 1,8] [--calls N] [--warmup N]");
      }
    }
    Map<String, ModelSpec> specs = new LinkedHashMap<>();
    specs.put("djl", ProjectModels.mlp().intraOpThreads(1).interOpThreads(1).build());
    specs.put("onnx", ProjectModels.mlpOnnx().intraOpThreads(1).interOpThreads(1).build());
    specs.put("python", PythonTests.mlp().build());
    specs.put("python-echo", ModelSpec.builder().uri(PythonTests.testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .input("input", DataType.FP32, -1, 64).output("input_out", DataType.FP32, -1, 64).intraOpThreads(1)
        .python(PythonOptions.builder().interpreter(PythonTests.interpreter()).className("Echo").build()).build());
    specs.put("builtin", ModelSpec.builder().uri(BuiltinModels.IDENTITY).engine(ModelSpec.ENGINE_BUILTIN)
        .input("input", DataType.FP32, -1, 64).build());
    Map<String, ModelRunner> runners = new LinkedHashMap<>();
    try {
      for (Map.Entry<String, ModelSpec> e : specs.entrySet()) {
        runners.put(e.getKey(), ModelRunners.load(e.getValue(), List.of()));
      }
      System.out.printf(Locale.ROOT, "%d calls per runner and batch size after %d warm-up calls; %s%n", calls, warmup,
          runners.get("python").loadInfo().engineVersion());
      for (int batch : batches) {
        List<InferenceRequest> requests = new ArrayList<>();
        for (int r = 0; r < batch; r++) {
          requests.add(ProjectModels.mlpRequest(1, r));
        }
        Map<String, long[]> nanos = new LinkedHashMap<>();
        runners.keySet().forEach(k -> nanos.put(k, new long[0]));
        for (int round = 0; round < 2; round++) { // round 0 warms up
          int n = round == 0 ? warmup : calls;
          Map<String, long[]> times = new LinkedHashMap<>();
          runners.keySet().forEach(k -> times.put(k, new long[n]));
          for (int c = 0; c < n; c++) {
            for (Map.Entry<String, ModelRunner> e : runners.entrySet()) {
              long s = System.nanoTime();
              e.getValue().infer(requests);
              times.get(e.getKey())[c] = System.nanoTime() - s;
            }
          }
          if (round == 1) {
            nanos.putAll(times);
          }
        }
        for (Map.Entry<String, long[]> e : nanos.entrySet()) {
          long[] t = e.getValue().clone();
          Arrays.sort(t);
          System.out.printf(Locale.ROOT, "batch %2d  %-12s median %8.1f us   p90 %8.1f us%n", batch, e.getKey(),
              t[t.length / 2] / 1e3, t[(int) (t.length * 0.9)] / 1e3);
        }
      }
      System.out.print(numpyAlone(batches));
    } finally {
      runners.values().forEach(ModelRunner::close);
    }
  }

  // The forward pass of the example's model.py timed inside one Python process: the compute share.
  private static String numpyAlone(List<Integer> batches) throws IOException, InterruptedException {
    String script = String.join("\n",
        "import sys, timeit, numpy as np",
        "sys.path.insert(0, sys.argv[1]); import model",
        "m = model.Model(); m.load({}, 'cpu')",
        "for b in [int(x) for x in sys.argv[2].split(',')]:",
        "    x = np.random.rand(b, 64).astype(np.float32)",
        "    t = sorted(timeit.repeat(lambda: m.predict({'input': x}), number=1, repeat=5000))",
        "    print('batch %2d  numpy forward alone median %8.1f us' % (b, t[len(t) // 2] * 1e6))");
    ProcessBuilder pb = new ProcessBuilder(PythonTests.interpreter(), "-c", script,
        PythonTests.repositoryRoot().resolve("deploy/examples/python").toString(),
        String.join(",", batches.stream().map(String::valueOf).toList())).redirectErrorStream(true);
    pb.environment().put("OMP_NUM_THREADS", "1");
    pb.environment().put("OPENBLAS_NUM_THREADS", "1");
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor();
    return out;
  }
}
