package io.kiln.pools.spi;

import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelSpec;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * An engine that runs models of one kind: its name as specs spell it, the model folders it recognises, the
 * rules its spec fields obey, what it can do, and how it loads a model into a {@link ModelRunner}. Engines are
 * found with {@link java.util.ServiceLoader} ({@link Engines}): each engine is a jar on the class path holding
 * its class and a {@code META-INF/services/io.kiln.pools.spi.Engine} file naming it: Kiln's own are the modules
 * {@code engines/builtin}, {@code engines/onnxruntime}, {@code engines/pytorch}, {@code engines/python} and
 * {@code engines/llm}, and a third-party engine is one more such jar (docs/engines.md).
 *
 * <p>Every implementation must guarantee:
 * <ol>
 *   <li>{@link #name()} is constant, unique among the installed engines (a duplicate stops the registry from
 *       loading), and spelled as specs spell it ({@code engine: PyTorch}).</li>
 *   <li>It has a public no-argument constructor that does no work (no native library loaded, no process
 *       started, no I/O): every node builds the registry, also nodes that never load one of its models.</li>
 *   <li>It is stateless and thread-safe: one instance serves every spec and worker of the JVM.</li>
 *   <li>{@link #recognizes} and {@link #check} are pure, cheap and never throw: the same spec is judged alike on
 *       every node, in code ({@link ModelSpec} throws the first problem) and in serve's YAML reader (which
 *       reports each with its line and column).</li>
 *   <li>{@link #load} blocks the calling worker thread and either returns a runner following the
 *       {@link ModelRunner} contract or throws (a {@link io.kiln.pools.ModelLoadException} naming the cause),
 *       having freed whatever it started. Kiln warms the runner up afterwards and records its
 *       {@link ModelRunner#loadInfo() load info}.</li>
 *   <li>A worker assigned a GPU the engine cannot use fails its load naming the cause, unless the spec sets
 *       {@link ModelSpec#allowCpuFallback()} (then it runs on the CPU and says so in the load's device);
 *       an engine that never uses GPUs ({@link Capabilities#usesGpus()} false) runs on the CPU.</li>
 *   <li>What {@link #capabilities()} claims holds for every runner it loads: one that reports memory returns
 *       {@link ModelRunner#memoryBytes()}; one that streams returns a {@link io.kiln.pools.StreamingModelRunner}
 *       for a spec with {@link ModelSpec#streaming()}.</li>
 * </ol>
 */
public interface Engine {

  /** The engine's name as specs spell it, e.g. {@code OnnxRuntime}. */
  String name();

  /** What the engine can do; constant. */
  Capabilities capabilities();

  /**
   * Whether a file of a model folder (by its name alone) shows this engine; a folder showing exactly one engine
   * is given it when its spec leaves {@code engine} out ({@link io.kiln.pools.ModelFolders#engineOf}).
   */
  boolean recognizes(String fileName);

  /**
   * The problems of a spec's fields under this engine's rules, the first one first (empty: none). The rules every
   * engine shares have been checked (the engine's name, tensor names and shapes, the uri's form, {@code streaming}
   * against {@link Capabilities#streams()}); {@code format} is checked against {@link Capabilities#formats()} after
   * this, so an engine may refuse a format in its own words. Check only what is this engine's own.
   */
  List<SpecProblem> check(SpecFields spec);

  /**
   * Loads the model {@code spec} names (a local folder: a remote uri has been fetched already) for a worker
   * assigned {@code gpuIndices} (empty: the CPU). Blocking; see the class comment (5, 6) for failures.
   */
  Loaded load(ModelSpec spec, List<Integer> gpuIndices);

  /**
   * The names of the settings a spec may give this engine in {@code options:} (empty, the default: it takes none).
   * Kiln refuses any other name, naming the ones there are; {@link #check} judges the values.
   */
  default List<String> optionNames() {
    return List.of();
  }

  /**
   * The tensors a spec that declares no inputs gets, for an engine whose models all take and return the same ones
   * (a decoder: text in, text chunks out); empty (the default): a spec must declare its inputs. Declared outputs
   * are kept; the signature's {@code streaming} turns streaming on. Pure and cheap, as {@link #check}.
   */
  default java.util.Optional<io.kiln.pools.ModelSignature> defaultSignature(SpecFields spec) {
    return java.util.Optional.empty();
  }

  /**
   * Whether the model a spec names streams whatever its {@code streaming} field says (a built-in whose name says it
   * streams, {@code builtin:chunks}); false, the default: it streams when the spec says so. {@code spec.streaming()} is
   * false here. Pure and cheap, as {@link #check}.
   */
  default boolean alwaysStreams(SpecFields spec) {
    return false;
  }

  /** The platform metadata names for this engine's models (KServe/Triton style, e.g. {@code onnxruntime_onnx}). */
  default String platform(ModelSpec spec) {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * What an engine can do.
   *
   * @param reportsMemory whether its runners report the memory a model holds, which a multiplexed repository's
   *     {@code max_memory_mb} needs (any engine can be multiplexed; only a capped repository needs this)
   * @param streaming how its models stream, for messages (e.g. {@code a class with predict_stream}); empty for an
   *     engine that runs one forward pass per batch and never streams
   * @param usesGpus whether it runs models on GPUs; false: it runs on the CPU whatever the worker is assigned
   * @param warmsItself whether a model warms itself at load (Kiln then runs each warm-up batch size once, or not at
   *     all for a streaming model, instead of repeating it to warm the JIT)
   * @param formats the {@code format} values it takes besides {@value ModelSpec#FORMAT_AUTO} (empty: none)
   * @param modelFiles what a folder holds when {@link #recognizes} it, for messages (e.g. {@code model.onnx});
   *     empty for an engine never detected from a folder
   */
  record Capabilities(boolean reportsMemory, String streaming, boolean usesGpus, boolean warmsItself,
                      List<String> formats, String modelFiles) {
    public Capabilities {
      streaming = streaming == null ? "" : streaming;
      formats = List.copyOf(formats);
      modelFiles = modelFiles == null ? "" : modelFiles;
    }

    /** Whether its models may declare {@code streaming: true}. */
    public boolean streams() {
      return !streaming.isEmpty();
    }
  }

  /**
   * A loaded model, not yet warmed up.
   *
   * @param runner the runner; its {@link ModelRunner#loadInfo()} is not called before Kiln records it
   * @param device where it runs, e.g. {@code cpu()} or {@code gpu(0)}
   * @param version the engine's version ("" if none)
   * @param format the model's format, e.g. {@code onnx}
   * @param parameters how many parameters the model has, empty if the engine cannot tell
   */
  record Loaded(ModelRunner runner, String device, String version, String format, OptionalLong parameters) {
  }
}
