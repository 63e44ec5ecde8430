package io.kiln.engines.pytorch.tools;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.translate.NoopTranslator;
import ai.djl.translate.TranslateException;
import io.kiln.engines.pytorch.impl.Architectures;
import io.kiln.engines.pytorch.impl.EngineSetup;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Measures ResNet-18 inference on the CPU at several batch sizes, two ways: a bare DJL {@link Predictor}
 * fed a ready NDArray (the engine's cost) and {@link ModelRunner#infer} fed {@code batch} one-row requests
 * (adds Kiln's checks, stacking, copies in and out, and splitting). Builds the model first if its folder lacks it.
 * Numbers only; nothing is asserted. Blocks for roughly {@code seconds} per batch size (at least three
 * calls each).
 *
 * <p>Usage: {@code PredictorThroughput [--model DIR] [--image-size S] [--batches 1,8,32] [--seconds N]
 * [--threads N]} (defaults: {@code models/resnet18}, 224, 1,8,32, 5, engine default).
 */
public final class PredictorThroughput {

  /**
   * One measurement.
   *
   * @param path {@code predictor} or {@code runner}
   * @param batch images per call
   * @param calls timed calls
   * @param p50Ms median latency of a call
   * @param meanMs mean latency of a call
   * @param imagesPerSecond batch / mean latency
   */
  public record Result(String path, int batch, int calls, double p50Ms, double meanMs, double imagesPerSecond) {
    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%-9s batch %3d: %4d calls, p50 %8.2f ms, mean %8.2f ms, %8.1f images/s",
          path, batch, calls, p50Ms, meanMs, imagesPerSecond);
    }
  }

  private PredictorThroughput() {
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of("models", "resnet18");
    int imageSize = 224;
    List<Integer> batches = List.of(1, 8, 32);
    double seconds = 5;
    int threads = 0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--model" -> dir = Path.of(args[++i]);
        case "--image-size" -> imageSize = Integer.parseInt(args[++i]);
        case "--batches" -> batches = Arrays.stream(args[++i].split(",")).map(Integer::valueOf).toList();
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--threads" -> threads = Integer.parseInt(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument '" + args[i] + "'; usage: PredictorThroughput "
            + "[--model DIR] [--image-size S] [--batches 1,8,32] [--seconds N] [--threads N]");
      }
    }
    long t0 = System.nanoTime();
    boolean built = BuildModels.buildResNet18(dir, imageSize, 1000, false);
    System.out.printf(Locale.ROOT, "model %s: %s in %.1f s%n", dir, built ? "built" : "present", (System.nanoTime() - t0) / 1e9);
    ModelSpec spec = BuildModels.resnet18Spec(dir, imageSize, 1000).toBuilder()
        .intraOpThreads(threads).interOpThreads(threads == 0 ? 0 : 1).warmupBatchSizes(batches).build();
    for (Result r : measure(spec, batches, seconds, System::nanoTime)) {
      System.out.println(r);
    }
  }

  /**
   * Measures both paths for each batch size, alternating their calls so that both see the same machine
   * load (on a shared machine it changes by the second).
   */
  public static List<Result> measure(ModelSpec spec, List<Integer> batches, double seconds, LongSupplier nanoClock)
      throws IOException, MalformedModelException, TranslateException {
    EngineSetup.pytorch(spec);
    List<Result> results = new ArrayList<>();
    long[] imageShape = spec.inputs().get(0).shape();
    imageShape[0] = 1;
    float[] pixels = new float[Math.toIntExact(Tensor.elementCount(imageShape))];
    for (int i = 0; i < pixels.length; i++) {
      pixels[i] = (i % 255) / 255f;
    }
    InferenceRequest one = InferenceRequest.of(Tensor.ofFloats(spec.inputs().get(0).name(), imageShape, pixels));
    try (Model model = Model.newInstance("resnet18", Device.cpu(), EngineSetup.ENGINE);
         ModelRunner runner = ModelRunners.load(spec, List.of())) {
      System.out.printf(Locale.ROOT, "runner load %.1f ms, warm-up %s %.1f ms%n", runner.loadInfo().loadTime().toNanos() / 1e6,
          runner.loadInfo().warmupBatchSizes(), runner.loadInfo().warmupTime().toNanos() / 1e6);
      model.setBlock(Architectures.build(spec));
      model.load(spec.uri(), BuildModels.RESNET_PREFIX);
      try (Predictor<NDList, NDList> predictor = model.newPredictor(new NoopTranslator());
           NDManager manager = model.getNDManager().newSubManager()) {
        for (int batch : batches) {
          long[] shape = imageShape.clone();
          shape[0] = batch;
          List<InferenceRequest> requests = Collections.nCopies(batch, one);
          try (NDManager inputs = manager.newSubManager()) {
            NDList input = new NDList(inputs.randomUniform(0, 1, new Shape(shape)));
            predictor.predict(input);
            runner.infer(requests);
            List<Long> direct = new ArrayList<>();
            List<Long> viaRunner = new ArrayList<>();
            long end = nanoClock.getAsLong() + (long) (seconds * 1e9);
            while (direct.size() < 3 || nanoClock.getAsLong() < end) {
              long s = nanoClock.getAsLong();
              predictor.predict(input);
              long m = nanoClock.getAsLong();
              runner.infer(requests);
              viaRunner.add(nanoClock.getAsLong() - m);
              direct.add(m - s);
            }
            results.add(summarize("predictor", batch, direct));
            results.add(summarize("runner", batch, viaRunner));
          }
        }
      }
    }
    return results;
  }

  private static Result summarize(String path, int batch, List<Long> nanos) {
    List<Long> sorted = new ArrayList<>(nanos);
    Collections.sort(sorted);
    double mean = sorted.stream().mapToLong(Long::longValue).average().orElse(0) / 1e6;
    double p50 = sorted.get(sorted.size() / 2) / 1e6;
    return new Result(path, batch, sorted.size(), p50, mean, batch / (mean / 1e3));
  }
}
