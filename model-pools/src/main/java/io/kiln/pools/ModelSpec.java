package io.kiln.pools;

import static io.kiln.pools.ModelSpecValues.canonicalEngine;
import static io.kiln.pools.ModelSpecValues.canonicalFormat;
import static io.kiln.pools.ModelSpecValues.checkTensors;
import static io.kiln.pools.ModelSpecValues.checkThreads;
import static io.kiln.pools.ModelSpecValues.copyOptions;
import static io.kiln.pools.ModelSpecValues.copyTensors;

import io.kiln.pools.spec.ModelField;
import io.kiln.pools.spec.ModelFields;
import io.kiln.pools.spi.Engines;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
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
 * reader and writer, {@link Builder} and the docs' field table follow, is {@link ModelFields}. A new field is a
 * component here and its {@link ModelField} constant there; its rule goes here when every engine shares it, or in
 * the {@link io.kiln.pools.spi.Engine#check} of the engine that owns it. {@link Builder#set} takes it without a
 * setter of its own.
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

  /** A builder of a {@value #ENGINE_PYTORCH} model with every other field at its default. */
  public static Builder builder() {
    return new Builder(Map.of(ModelFields.ENGINE, ENGINE_PYTORCH));
  }

  /** A builder holding this spec's values, for changing a few of them. */
  public Builder toBuilder() {
    return new Builder(ModelFields.values(this));
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

  /**
   * Collects a {@link ModelSpec} as the values of its {@link ModelFields}: {@link #set} takes any field, the typed
   * setters are sugar over it that reject obviously wrong values at once, {@link #build()} checks the rest. A field
   * never set takes its {@link ModelField#defaultValue()}. Not thread-safe.
   */
  public static final class Builder {
    private final Map<ModelField, Object> values = new HashMap<>();

    private Builder(Map<ModelField, Object> values) {
      values.forEach(this::set);
    }

    /**
     * Sets one field; null leaves it to its default. A list or map is copied.
     *
     * @throws IllegalArgumentException naming the field when {@code value} is not of its component's type
     *     ({@link ModelFields#typeProblem})
     */
    public Builder set(ModelField field, Object value) {
      String problem = ModelFields.typeProblem(field, value);
      if (problem != null) {
        throw new IllegalArgumentException(field.component() + ": " + problem);
      }
      values.put(field, value instanceof List<?> l ? new ArrayList<>(l)
          : value instanceof Map<?, ?> m ? new LinkedHashMap<>(m) : value);
      return this;
    }

    public Builder uri(Path uri) {
      return set(ModelFields.URI, Objects.requireNonNull(uri, "uri"));
    }

    /** A path, {@code builtin:<name>} for a built-in model, or a remote URI ({@link ModelUris}). */
    public Builder uri(String uri) {
      if (uri == null || uri.isBlank()) {
        throw new IllegalArgumentException("uri: required");
      }
      return uri(Path.of(uri.trim()));
    }

    public Builder engine(String engine) {
      return set(ModelFields.ENGINE, canonicalEngine(engine));
    }

    public Builder format(String format) {
      return set(ModelFields.FORMAT, canonicalFormat(format));
    }

    public Builder architecture(String architecture) {
      return set(ModelFields.ARCHITECTURE, architecture);
    }

    public Builder inputs(List<TensorSpec> inputs) {
      return set(ModelFields.INPUTS, Objects.requireNonNull(inputs, "inputs"));
    }

    /** Appends an input. */
    public Builder input(String name, DataType datatype, long... shape) {
      return append(ModelFields.INPUTS, new TensorSpec(name, datatype, shape));
    }

    public Builder outputs(List<TensorSpec> outputs) {
      return set(ModelFields.OUTPUTS, Objects.requireNonNull(outputs, "outputs"));
    }

    /** Appends an output. */
    public Builder output(String name, DataType datatype, long... shape) {
      return append(ModelFields.OUTPUTS, new TensorSpec(name, datatype, shape));
    }

    public Builder warmupBatchSizes(List<Integer> sizes) {
      return set(ModelFields.WARMUP_BATCH_SIZES, Objects.requireNonNull(sizes, "warmupBatchSizes"));
    }

    public Builder warmupBatchSizes(Integer... sizes) {
      return warmupBatchSizes(List.of(sizes));
    }

    public Builder intraOpThreads(int n) {
      checkThreads("intraOpThreads", n);
      return set(ModelFields.INTRA_OP_THREADS, n);
    }

    public Builder interOpThreads(int n) {
      checkThreads("interOpThreads", n);
      return set(ModelFields.INTER_OP_THREADS, n);
    }

    /** Options of a {@value #ENGINE_PYTHON} model; null (the default) means {@link PythonOptions#DEFAULTS}. */
    public Builder python(PythonOptions python) {
      return set(ModelFields.PYTHON, python);
    }

    /** See {@link ModelSpec#allowCpuFallback()}; false by default. */
    public Builder allowCpuFallback(boolean allow) {
      return set(ModelFields.ALLOW_CPU_FALLBACK, allow);
    }

    /** Whether the model streams (see {@link ModelSpec#streaming()}); false by default. */
    public Builder streaming(boolean streaming) {
      return set(ModelFields.STREAMING, streaming);
    }

    /** The hex SHA-256 of what a remote uri names (see {@link ModelUris#sha256Problem}); empty for none. */
    public Builder sha256(String sha256) {
      return set(ModelFields.SHA256, sha256);
    }

    /** The engine's own settings (see {@link ModelSpec#options()}); empty by default. */
    public Builder options(Map<String, String> options) {
      return set(ModelFields.OPTIONS, options == null ? Map.of() : Map.copyOf(options));
    }

    /** The model's sequences and implicit state (see {@link ModelSpec#sequence()}); null (the default) for none. */
    public Builder sequence(SequenceSpec sequence) {
      return set(ModelFields.SEQUENCE, sequence);
    }

    /** @throws IllegalArgumentException naming the first field that is missing or inconsistent */
    public ModelSpec build() {
      return ModelFields.build(values);
    }

    private Builder append(ModelField field, TensorSpec tensor) {
      List<Object> list = new ArrayList<>((List<?>) Objects.requireNonNullElse(values.get(field), List.of()));
      list.add(tensor);
      return set(field, list);
    }
  }
}
