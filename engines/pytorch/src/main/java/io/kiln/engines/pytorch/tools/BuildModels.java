package io.kiln.engines.pytorch.tools;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.translate.TranslateException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.engines.pytorch.impl.Architectures;
import io.kiln.engines.pytorch.impl.EngineSetup;
import io.kiln.engines.pytorch.impl.SeededInit;
import io.kiln.engines.pytorch.impl.TensorTranslator;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Builds the project's DJL models with seeded weights (see {@link SeededInit}), in DJL's {@code .params}
 * format, so that they need no download and no Python:
 *
 * <ul>
 *   <li>{@code mlp-djl}: the MLP of {@code models/mlp} (64 → 256 → ReLU → 10) as a DJL block, plus
 *       {@code expected.json}: its output for the fixed input of {@code models/mlp/expected.json}, computed
 *       from the in-memory block before saving. Committed in {@code models/mlp-djl}.
 *   <li>{@code resnet18}: ResNet-18 for 3×S×S images and C classes (default 224 and 1000; 45 MiB, so it is
 *       git-ignored and built where needed, e.g. by benchmarks).
 * </ul>
 *
 * <p>Usage: {@code BuildModels [--models DIR] [--image-size S] [--classes C] [--force] [mlp-djl] [resnet18]}
 * (default: {@code resnet18} into {@code models/resnet18}, skipped when already there). Blocks; starts the
 * PyTorch engine.
 */
public final class BuildModels {

  public static final String MLP_PREFIX = "mlp";
  public static final String RESNET_PREFIX = "resnet18";
  public static final long MLP_SEED = 20240601L;
  public static final long RESNET_SEED = 18L;
  public static final int MLP_IN = 64;
  public static final int MLP_OUT = 10;

  private BuildModels() {
  }

  public static void main(String[] args) throws IOException {
    Path models = Path.of("models");
    int imageSize = 224;
    int classes = 1000;
    boolean force = false;
    boolean mlp = false;
    boolean resnet = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--models" -> models = Path.of(args[++i]);
        case "--image-size" -> imageSize = Integer.parseInt(args[++i]);
        case "--classes" -> classes = Integer.parseInt(args[++i]);
        case "--force" -> force = true;
        case "mlp-djl" -> mlp = true;
        case "resnet18" -> resnet = true;
        default -> throw new IllegalArgumentException("unknown argument '" + args[i] + "'; usage: BuildModels "
            + "[--models DIR] [--image-size S] [--classes C] [--force] [mlp-djl] [resnet18]");
      }
    }
    if (!mlp && !resnet) {
      resnet = true;
    }
    if (mlp) {
      Path dir = models.resolve("mlp-djl");
      buildMlp(dir, models.resolve("mlp").resolve("expected.json"));
      System.out.println("built " + dir);
    }
    if (resnet) {
      Path dir = models.resolve("resnet18");
      long t0 = System.nanoTime();
      boolean built = buildResNet18(dir, imageSize, classes, force);
      System.out.printf(Locale.ROOT, "%s %s (3x%dx%d, %d classes) in %.1f s%n", built ? "built" : "kept existing", dir,
          imageSize, imageSize, classes, (System.nanoTime() - t0) / 1e9);
    }
  }

  /** The spec that serves {@code models/mlp-djl}-style folders. */
  public static ModelSpec mlpSpec(Path dir) {
    return ModelSpec.builder().uri(dir).format(ModelSpec.FORMAT_DJL_PARAMS).architecture("mlp")
        .input("input", io.kiln.pools.DataType.FP32, -1, MLP_IN)
        .output("output", io.kiln.pools.DataType.FP32, -1, MLP_OUT)
        .build();
  }

  /** The spec that serves a folder written by {@link #buildResNet18}. */
  public static ModelSpec resnet18Spec(Path dir, int imageSize, int classes) {
    return ModelSpec.builder().uri(dir).format(ModelSpec.FORMAT_DJL_PARAMS).architecture("resnet18")
        .input("image", io.kiln.pools.DataType.FP32, -1, 3, imageSize, imageSize)
        .output("logits", io.kiln.pools.DataType.FP32, -1, classes)
        .build();
  }

  /**
   * Writes {@code mlp-0000.params} and {@code expected.json} (the block's output for the input recorded in
   * {@code torchExpected}, the TorchScript MLP's fixture) into {@code dir}.
   */
  public static void buildMlp(Path dir, Path torchExpected) throws IOException {
    ObjectMapper json = new ObjectMapper();
    ObjectNode fixture = (ObjectNode) json.readTree(torchExpected.toFile());
    Tensor input = tensorFrom(fixture.get("input"));
    ModelSpec spec = mlpSpec(dir);
    Block block = Architectures.build(spec);
    try (Model model = newModel(MLP_PREFIX, block, new Shape(1, MLP_IN), MLP_SEED)) {
      Tensor output;
      try (Predictor<List<Tensor>, List<Tensor>> predictor = model.newPredictor(new TensorTranslator())) {
        output = predictor.predict(List.of(input)).get(0).withName("output");
      } catch (TranslateException e) {
        throw new IllegalStateException("the freshly built MLP failed to run", e);
      }
      Files.createDirectories(dir);
      model.setProperty("Epoch", "0");
      model.save(dir, MLP_PREFIX);
      ObjectNode expected = json.createObjectNode();
      expected.put("description", "input: as models/mlp/expected.json; output: computed by DJL's PyTorch engine "
          + "from the in-memory block (architecture 'mlp', SeededInit seed " + MLP_SEED + ") before it was saved");
      expected.set("input", fixture.get("input"));
      expected.set("output", tensorJson(json, output));
      // One line per key, like models/mlp/expected.json: short, and diffs stay readable.
      StringBuilder text = new StringBuilder("{\n");
      for (var it = expected.fields(); it.hasNext(); ) {
        var e = it.next();
        text.append(' ').append(json.writeValueAsString(e.getKey())).append(": ")
            .append(json.writeValueAsString(e.getValue())).append(it.hasNext() ? ",\n" : "\n");
      }
      Files.writeString(dir.resolve("expected.json"), text.append("}\n"));
    }
  }

  /**
   * Writes {@code resnet18-0000.params} into {@code dir} unless it is there already (and not {@code force}).
   *
   * @return whether it was built
   */
  public static boolean buildResNet18(Path dir, int imageSize, int classes, boolean force) throws IOException {
    Path file = dir.resolve(RESNET_PREFIX + "-0000.params");
    if (Files.isRegularFile(file) && !force) {
      return false;
    }
    Block block = Architectures.build(resnet18Spec(dir, imageSize, classes));
    try (Model model = newModel(RESNET_PREFIX, block, new Shape(1, 3, imageSize, imageSize), RESNET_SEED)) {
      Files.createDirectories(dir);
      // Write under another name first so a crash never leaves a truncated file that looks complete.
      Path tmp = Files.createTempDirectory(dir, ".building");
      model.setProperty("Epoch", "0");
      model.save(tmp, RESNET_PREFIX);
      Files.move(tmp.resolve(file.getFileName()), file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      Files.delete(tmp);
    }
    return true;
  }

  private static Model newModel(String name, Block block, Shape inputShape, long seed) {
    EngineSetup.pytorch(0, 0);
    Model model = Model.newInstance(name, ai.djl.Device.cpu(), EngineSetup.ENGINE);
    model.setBlock(block);
    block.initialize(model.getNDManager(), DataType.FLOAT32, inputShape);
    SeededInit.apply(block, seed);
    return model;
  }

  private static Tensor tensorFrom(com.fasterxml.jackson.databind.JsonNode node) {
    long[] shape = new long[node.get("shape").size()];
    for (int i = 0; i < shape.length; i++) {
      shape[i] = node.get("shape").get(i).asLong();
    }
    float[] values = new float[node.get("data").size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) node.get("data").get(i).asDouble();
    }
    return Tensor.ofFloats(node.get("name").asText(), shape, values);
  }

  private static ObjectNode tensorJson(ObjectMapper json, Tensor t) {
    ObjectNode node = json.createObjectNode();
    node.put("name", t.name());
    node.put("datatype", t.datatype().name());
    ArrayNode shape = node.putArray("shape");
    for (long d : t.shape()) {
      shape.add(d);
    }
    ArrayNode data = node.putArray("data");
    for (float v : t.asFloats()) {
      data.add((double) v);
    }
    return node;
  }
}
