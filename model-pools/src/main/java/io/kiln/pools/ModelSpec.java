package io.kiln.pools;

import io.kiln.pools.spec.ModelFields;
import io.kiln.pools.spi.Engines;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What a model worker loads and how it is fed: where the model is, which engine runs it, the declared
 * input and output tensors, the batch sizes to warm up with and the engine's thread counts. Immutable and
 * validated on construction ({@link IllegalArgumentException} with a message naming the field).
 *
 * <p>Engines: Kiln's own are {@value #ENGINE_PYTORCH}, {@value #ENGINE_ONNX}, {@value #ENGINE_PYTHON} (run as
 * {@link PythonOptions} say) and {@value #ENGINE_BUILTIN} ({@code uri} names a built-in model such as
 * {@code builtin:identity}, see module {@code engines/builtin}), each a jar of its own (docs/engines.md); each says in
 * its {@link io.kiln.pools.spi.Engine} class what its folder holds and which fields it takes.
 *
 * <p>Formats: {@value #FORMAT_AUTO} (default; detected from the folder when the model is loaded),
 * {@value #FORMAT_TORCHSCRIPT} or {@value #FORMAT_DJL_PARAMS}. A {@code .params} file holds only
 * weights, so {@code architecture} names the block to construct around them: {@code mlp} (one hidden layer
 * of 256), {@code mlp:512,128} (hidden widths given), or {@code resnet18}; input and output widths come
 * from the tensor specs.
 *
 * <p>The set of engines is open: {@link #engines()} lists the names the JVM's {@link Engines} registry holds
 * (Kiln's own and any {@link io.kiln.pools.spi.Engine} on the class path). The rules every engine shares are here
 * and in {@link SpecRules}; those of one engine are its {@link io.kiln.pools.spi.Engine#check}, beside it.
 *
 * <p>The schema of these fields (YAML names, kinds, defaults, owners, docs), from which the wire form, serve's YAML
 * reader and writer and the docs' field table follow, is {@link ModelFields}: a new component needs its field there.
 *
 * <p>Threads: {@code intraOpThreads}/{@code interOpThreads} of 0 leave the engine's default. PyTorch's
 * thread pools are process-wide and sized once when the engine starts, so the values of the first model
 * loaded in a JVM win (see {@link ModelRunners#load}).
 *
 * @param uri folder (or file) holding the model, or {@code builtin:<name>} for the built-in engine
 * @param engine the name of an engine of {@link #engines()}, e.g. {@value #ENGINE_PYTORCH} (matched ignoring case)
 * @param format {@value #FORMAT_AUTO}, {@value #FORMAT_TORCHSCRIPT} or {@value #FORMAT_DJL_PARAMS}
 * @param architecture the block to build for {@value #FORMAT_DJL_PARAMS}; empty otherwise
 * @param inputs the model's inputs in the order the model takes them; a first dimension of -1 is the batch
 *     dimension, a scalar ({@code []}) or a fixed first dimension is passed whole (see {@link TensorSpec#batched})
 * @param outputs the model's outputs in the order it returns them (may be empty for built-ins, meaning
 *     "named like the inputs")
 * @param warmupBatchSizes batch sizes (in requests) to warm the model with before it serves: zeros, or the model
 *     folder's {@code warmup/*.json} samples (each repeated within a bounded budget, see {@link ModelRunners#load})
 * @param intraOpThreads threads per operator, 0 for the engine default
 * @param interOpThreads threads across operators, 0 for the engine default
 * @param python how to run a {@value #ENGINE_PYTHON} model ({@link PythonOptions#DEFAULTS} when null); null
 *     for every other engine
 * @param allowCpuFallback whether a worker assigned a GPU that its engine cannot use may run on the CPU
 *     instead (with a warning); false, the default, fails its load naming the cause
 * @param streaming whether the model answers each request with a sequence of chunks (a
 *     {@link StreamingModelRunner}): a Python model whose class has {@code predict_stream}, or a streaming
 *     built-in ({@code builtin:chunks}, which always streams); see {@link SpecRules#streamingFits}
 * @param sha256 the hex SHA-256 of what a remote {@code uri} names (see {@link ModelUris}): required for
 *     {@code https://}, optional for {@code s3://}, empty for a local folder
 * @param options the engine's own settings ({@code options:} in YAML, e.g. a decoder's KV-cache budget), as written;
 *     each engine judges its own in {@link io.kiln.pools.spi.Engine#check} (empty: none)
 * @param sequence a stateful model's sequences and implicit state ({@code sequence:} in YAML), or null for a model
 *     whose requests stand alone; its state tensors are among {@code inputs}/{@code outputs} (what the model takes)
 *     but not in {@link #signature()} (what clients send)
 */
public record ModelSpec(Path uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                        List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads,
                        int interOpThreads, PythonOptions python, boolean allowCpuFallback, boolean streaming,
                        String sha256, Map<String, String> options, SequenceSpec sequence) {

  public static final String ENGINE_PYTORCH = "PyTorch";
  public static final String ENGINE_BUILTIN = "Builtin";
  public static final String ENGINE_PYTHON = "Python";
  /** ONNX Runtime: a folder holding {@code model.onnx} (or the path of one {@code .onnx} file). */
  public static final String ENGINE_ONNX = "OnnxRuntime";
  public static final String FORMAT_AUTO = "auto";
  public static final String FORMAT_TORCHSCRIPT = "torchscript";
  public static final String FORMAT_DJL_PARAMS = "djl-params";
  /** The formats a spec may declare ({@value #FORMAT_AUTO}, the default, is detected from the files). */
  public static final List<String> FORMATS = List.of(FORMAT_TORCHSCRIPT, FORMAT_DJL_PARAMS);
  /** The prefix of URIs naming a model built into Kiln. */
  public static final String BUILTIN_PREFIX = "builtin:";
  public static final List<Integer> DEFAULT_WARMUP_BATCH_SIZES = List.of(1);
  /** Upper bound on a warm-up batch size and on thread counts: larger values are configuration mistakes. */
  public static final int MAX_WARMUP_BATCH_SIZE = 4096;
  public static final int MAX_THREADS = 1024;

  /**
   * Every engine this JVM runs ({@link Engines#installed()}), spelled as specs spell them, in registry order. A method,
   * not a constant: this class's initialisation must not load the engines, whose classes use its constants.
   */
  public static List<String> engines() {
    return Engines.installed().names();
  }

  public ModelSpec {
    Objects.requireNonNull(uri, "uri");
    engine = canonicalEngine(engine);
    io.kiln.pools.spi.Engine runs = Engines.installed().get(engine);
    format = canonicalFormat(format);
    architecture = architecture == null ? "" : architecture.trim();
    inputs = copyTensors("inputs", Objects.requireNonNull(inputs, "inputs"));
    outputs = outputs == null ? List.of() : copyTensors("outputs", outputs);
    options = copyOptions(options);
    if (inputs.isEmpty()) { // an engine whose models all take the same tensors (a decoder's text) may say which
      SpecFields declared = new SpecFields(uri.toString(), format, architecture, inputs, outputs, streaming, options);
      java.util.Optional<ModelSignature> given = runs.defaultSignature(declared);
      if (given.isPresent()) {
        inputs = given.get().inputs();
        outputs = outputs.isEmpty() ? given.get().outputs() : outputs;
        streaming = streaming || given.get().streaming();
      }
    }
    if (warmupBatchSizes != null && warmupBatchSizes.stream().anyMatch(Objects::isNull)) {
      throw new IllegalArgumentException("warmupBatchSizes: contains null");
    }
    warmupBatchSizes = warmupBatchSizes == null ? DEFAULT_WARMUP_BATCH_SIZES : List.copyOf(warmupBatchSizes);
    checkTensors("inputs", inputs);
    checkTensors("outputs", outputs);
    if (inputs.isEmpty()) {
      throw new IllegalArgumentException("inputs: a model needs at least one input");
    }
    String sizes = ModelFields.WARMUP_BATCH_SIZES.problem(warmupBatchSizes);
    if (sizes != null) {
      throw new IllegalArgumentException("warmupBatchSizes: " + sizes);
    }
    checkThreads("intraOpThreads", intraOpThreads);
    checkThreads("interOpThreads", interOpThreads);
    SpecRules.require("uri", SpecRules.engineMatchesUri(engine, uri.toString()));
    SpecRules.require("uri", ModelUris.problem(uri.toString()));
    sha256 = sha256 == null ? "" : sha256.trim();
    SpecRules.require("sha256", ModelUris.sha256Problem(uri.toString(), sha256));
    streaming = streaming || runs.alwaysStreams(new SpecFields(uri.toString(), format, architecture, inputs, outputs,
        false, options));
    SpecRules.require("streaming", SpecRules.streamingFits(engine, uri.toString(), streaming));
    if (python != null) { // the one field an engine owns (ModelFields: its owner)
      SpecRules.require("python:", ModelFields.PYTHON.ownerProblem(engine));
    }
    if (engine.equals(ENGINE_PYTHON) && python == null) {
      python = PythonOptions.DEFAULTS;
    }
    List<String> known = runs.optionNames();
    for (String option : options.keySet()) {
      if (!known.contains(option)) {
        throw new IllegalArgumentException("options." + option + ": unknown option of engine " + engine
            + (known.isEmpty() ? " (it takes none)" : "; expected one of " + String.join(", ", known)));
      }
    }
    List<SpecProblem> problems = runs.check(new SpecFields(uri.toString(), format, architecture, inputs, outputs,
        streaming, options));
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(problems.get(0).toString());
    }
    if (sequence != null) {
      if (streaming) {
        throw new IllegalArgumentException("sequence: a streaming model cannot keep sequences");
      }
      String problem = sequence.problemWith(inputs, outputs);
      if (problem != null) {
        throw new IllegalArgumentException(problem);
      }
    }
    String formatProblem = SpecRules.formatFits(engine, format);
    if (formatProblem != null) { // the message starts with the field: "format applies to ..."
      throw new IllegalArgumentException(formatProblem);
    }
  }

  /** A spec of a local model (no sha256). */
  public ModelSpec(Path uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                   List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads, int interOpThreads,
                   PythonOptions python, boolean allowCpuFallback, boolean streaming) {
    this(uri, engine, format, architecture, inputs, outputs, warmupBatchSizes, intraOpThreads, interOpThreads, python,
        allowCpuFallback, streaming, "", Map.of(), null);
  }

  /** A spec of a model without sequences. */
  public ModelSpec(Path uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                   List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads, int interOpThreads,
                   PythonOptions python, boolean allowCpuFallback, boolean streaming, String sha256,
                   Map<String, String> options) {
    this(uri, engine, format, architecture, inputs, outputs, warmupBatchSizes, intraOpThreads, interOpThreads, python,
        allowCpuFallback, streaming, sha256, options, null);
  }

  /** A spec of a model that streams only if it is a streaming built-in. */
  public ModelSpec(Path uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                   List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads, int interOpThreads,
                   PythonOptions python, boolean allowCpuFallback) {
    this(uri, engine, format, architecture, inputs, outputs, warmupBatchSizes, intraOpThreads, interOpThreads, python,
        allowCpuFallback, false);
  }

  /** A spec for an engine other than {@value #ENGINE_PYTHON}, or a Python one with default options. */
  public ModelSpec(Path uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                   List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads, int interOpThreads) {
    this(uri, engine, format, architecture, inputs, outputs, warmupBatchSizes, intraOpThreads, interOpThreads, null,
        false);
  }

  /** A spec whose GPU workers never fall back to the CPU. */
  public ModelSpec(Path uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                   List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads, int interOpThreads,
                   PythonOptions python) {
    this(uri, engine, format, architecture, inputs, outputs, warmupBatchSizes, intraOpThreads, interOpThreads, python,
        false);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this spec's values, for changing a few of them. */
  public Builder toBuilder() {
    return new Builder().uri(uri).engine(engine).format(format).architecture(architecture).inputs(inputs)
        .outputs(outputs).warmupBatchSizes(warmupBatchSizes).intraOpThreads(intraOpThreads)
        .interOpThreads(interOpThreads).python(python).allowCpuFallback(allowCpuFallback).streaming(streaming).sha256(sha256).options(options)
        .sequence(sequence);
  }

  /** The remote URI this spec's model is downloaded from, or empty for a local folder or a built-in. */
  public java.util.Optional<java.net.URI> remoteUri() {
    return ModelUris.remote(uri.toString());
  }

  /** Whether this spec names a built-in model rather than files on disk. */
  public boolean isBuiltin() {
    return engine.equals(ENGINE_BUILTIN);
  }

  /** The built-in model's name ({@code identity} for {@code builtin:identity}), or empty for a folder. */
  public java.util.Optional<String> builtinName() {
    return isBuiltin() ? java.util.Optional.of(uri.toString().substring(BUILTIN_PREFIX.length()))
        : java.util.Optional.empty();
  }

  /**
   * The tensors requests are checked against; a built-in that declares no outputs names them like its inputs. A
   * sequence model's state tensors are left out: the worker feeds them, the client never sees them.
   */
  public ModelSignature signature() {
    List<TensorSpec> in = inputs;
    List<TensorSpec> out = outputs.isEmpty() && isBuiltin() ? inputs : outputs;
    if (sequence != null) {
      Set<String> stateIn = sequence.stateInputs();
      Set<String> stateOut = sequence.stateOutputs();
      in = in.stream().filter(t -> !stateIn.contains(t.name())).toList();
      out = out.stream().filter(t -> !stateOut.contains(t.name())).toList();
    }
    return new ModelSignature(in, out, streaming);
  }

  /** What the model itself takes and gives, state tensors included ({@link #signature()} for a plain model). */
  public ModelSignature modelSignature() {
    return new ModelSignature(inputs, outputs.isEmpty() && isBuiltin() ? inputs : outputs, streaming);
  }

  private static String canonicalEngine(String engine) {
    if (engine == null || engine.isBlank()) {
      throw new IllegalArgumentException("engine: required, one of " + String.join(", ", engines()));
    }
    Engines engines = Engines.installed();
    return engines.findIgnoringCase(engine).map(io.kiln.pools.spi.Engine::name)
        .orElseThrow(() -> new IllegalArgumentException("engine: " + engines.unknown(engine)));
  }

  private static String canonicalFormat(String format) {
    if (format == null || format.isBlank()) {
      return FORMAT_AUTO;
    }
    String f = format.trim().toLowerCase(Locale.ROOT);
    if (!f.equals(FORMAT_AUTO) && !FORMATS.contains(f)) {
      throw new IllegalArgumentException("format: unknown format '" + format + "', expected " + FORMAT_TORCHSCRIPT
          + ", " + FORMAT_DJL_PARAMS + " or " + FORMAT_AUTO);
    }
    return f;
  }

  private static List<TensorSpec> copyTensors(String field, List<TensorSpec> specs) {
    if (specs.stream().anyMatch(Objects::isNull)) {
      throw new IllegalArgumentException(field + ": contains null");
    }
    return List.copyOf(specs);
  }

  private static void checkTensors(String field, List<TensorSpec> specs) {
    Set<String> names = new HashSet<>();
    for (TensorSpec s : specs) {
      if (s.name().isBlank()) {
        throw new IllegalArgumentException(field + ": tensor names must not be blank");
      }
      if (!names.add(s.name())) {
        throw new IllegalArgumentException(field + ": duplicate tensor name '" + s.name() + "'");
      }
      if (SpecRules.rank(s.shape().length) != null) {
        throw new IllegalArgumentException(field + ": '" + s.name() + "' " + SpecRules.rank(s.shape().length));
      }
    }
  }

  private static Map<String, String> copyOptions(Map<String, String> options) {
    if (options == null || options.isEmpty()) {
      return Map.of();
    }
    Map<String, String> copy = new java.util.TreeMap<>(); // sorted: one wire and YAML form per spec
    options.forEach((k, v) -> {
      if (k == null || k.isBlank() || v == null) {
        throw new IllegalArgumentException("options: '" + k + "' needs a name and a value");
      }
      copy.put(k.trim(), v.trim());
    });
    return java.util.Collections.unmodifiableMap(copy);
  }

  private static void checkThreads(String field, int n) {
    String problem = ModelFields.threads(n);
    if (problem != null) {
      throw new IllegalArgumentException(field + ": " + problem);
    }
  }

  /** Collects a {@link ModelSpec}; setters reject obviously wrong values, {@link #build()} checks the rest. */
  public static final class Builder {
    private Path uri;
    private String engine = ENGINE_PYTORCH;
    private String format = FORMAT_AUTO;
    private String architecture = "";
    private final List<TensorSpec> inputs = new ArrayList<>();
    private final List<TensorSpec> outputs = new ArrayList<>();
    private List<Integer> warmupBatchSizes = DEFAULT_WARMUP_BATCH_SIZES;
    private int intraOpThreads;
    private int interOpThreads;
    private PythonOptions python;
    private boolean allowCpuFallback;
    private boolean streaming;
    private String sha256 = "";
    private Map<String, String> options = Map.of();
    private SequenceSpec sequence;

    private Builder() {
    }

    public Builder uri(Path uri) {
      this.uri = Objects.requireNonNull(uri, "uri");
      return this;
    }

    /** A path, {@code builtin:<name>} for a built-in model, or a remote URI ({@link ModelUris}). */
    public Builder uri(String uri) {
      if (uri == null || uri.isBlank()) {
        throw new IllegalArgumentException("uri: required");
      }
      return uri(Path.of(uri.trim()));
    }

    public Builder engine(String engine) {
      this.engine = canonicalEngine(engine);
      return this;
    }

    public Builder format(String format) {
      this.format = canonicalFormat(format);
      return this;
    }

    public Builder architecture(String architecture) {
      this.architecture = architecture == null ? "" : architecture;
      return this;
    }

    public Builder inputs(List<TensorSpec> inputs) {
      this.inputs.clear();
      this.inputs.addAll(inputs);
      return this;
    }

    public Builder input(String name, DataType datatype, long... shape) {
      inputs.add(new TensorSpec(name, datatype, shape));
      return this;
    }

    public Builder outputs(List<TensorSpec> outputs) {
      this.outputs.clear();
      this.outputs.addAll(outputs);
      return this;
    }

    public Builder output(String name, DataType datatype, long... shape) {
      outputs.add(new TensorSpec(name, datatype, shape));
      return this;
    }

    public Builder warmupBatchSizes(List<Integer> sizes) {
      this.warmupBatchSizes = new ArrayList<>(sizes);
      return this;
    }

    public Builder warmupBatchSizes(Integer... sizes) {
      return warmupBatchSizes(List.of(sizes));
    }

    public Builder intraOpThreads(int n) {
      checkThreads("intraOpThreads", n);
      this.intraOpThreads = n;
      return this;
    }

    public Builder interOpThreads(int n) {
      checkThreads("interOpThreads", n);
      this.interOpThreads = n;
      return this;
    }

    /** Options of a {@value #ENGINE_PYTHON} model; null (the default) means {@link PythonOptions#DEFAULTS}. */
    public Builder python(PythonOptions python) {
      this.python = python;
      return this;
    }

    /**
     * Whether a worker assigned a GPU that its engine cannot use may run on the CPU instead (default false:
     * its load fails, naming the cause).
     */
    public Builder allowCpuFallback(boolean allow) {
      this.allowCpuFallback = allow;
      return this;
    }

    /** Whether the model streams (see {@link ModelSpec#streaming()}); false by default. */
    public Builder streaming(boolean streaming) {
      this.streaming = streaming;
      return this;
    }

    /** The hex SHA-256 of what a remote uri names (see {@link ModelUris#sha256Problem}); empty for none. */
    public Builder sha256(String sha256) {
      this.sha256 = sha256 == null ? "" : sha256;
      return this;
    }

    /** The engine's own settings (see {@link ModelSpec#options()}); empty by default. */
    public Builder options(Map<String, String> options) {
      this.options = options == null ? Map.of() : Map.copyOf(options);
      return this;
    }

    /** The model's sequences and implicit state (see {@link ModelSpec#sequence()}); null (the default) for none. */
    public Builder sequence(SequenceSpec sequence) {
      this.sequence = sequence;
      return this;
    }

    /** @throws IllegalArgumentException naming the first field that is missing or inconsistent */
    public ModelSpec build() {
      if (uri == null) {
        throw new IllegalArgumentException("uri: required");
      }
      return new ModelSpec(uri, engine, format, architecture, inputs, outputs, warmupBatchSizes, intraOpThreads,
          interOpThreads, python, allowCpuFallback, streaming, sha256, options, sequence);
    }
  }
}
