package io.kiln.engines.python.impl;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import io.kiln.runtime.ActorContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * Runs an {@code engine: Python} model: the user's class in the model folder's {@code model.py}, inside one
 * {@link PythonProcess} this runner starts when it loads and stops when it closes.
 *
 * <p>Errors: a {@code predict} that raises fails its batch with an {@link InferenceException} of kind
 * INTERNAL carrying Python's exception type, message and traceback tail; the process and the runner go
 * on. The process dying, hanging past {@link PythonOptions#requestTimeout()} or garbling its reply is a
 * {@link ModelExecutionException}, as an engine failure of any other runner: the worker is restarted,
 * which starts a new process. After that every call fails at once.
 *
 * <p>Streaming ({@code model.streaming: true}): the class's {@code predict_stream(inputs)} is a generator; each
 * {@link ChunkStream#next()} is one {@code stream_next} exchange (the process advances the generator by one
 * yield), so the JVM pulls a chunk only when its reader has room and a cancel closes the generator
 * ({@code stream_close}, Python's {@code GeneratorExit}) before it computes another. An exception raised in the
 * generator ends that stream with an INTERNAL error; the process goes on.
 */
public final class PythonModelRunner extends AbstractModelRunner implements StreamingModelRunner {

  public static final String FORMAT = "python";

  // Python's message for an import that failed: "No module named 'cv2'" (or 'a.b').
  private static final java.util.regex.Pattern NO_MODULE = java.util.regex.Pattern.compile("No module named '([^']+)'");

  private final PythonProcess process;
  private final PythonOptions options;
  private final String device;
  private final String engineVersion;

  private PythonModelRunner(ModelSpec spec, PythonProcess process, String device, String engineVersion) {
    super(spec, spec.outputs());
    this.process = process;
    this.options = spec.python();
    this.device = device;
    this.engineVersion = engineVersion;
  }

  /**
   * Starts the process, loads the model in it (its {@code load} and {@code warmup}) and waits for it to
   * report ready, within {@link PythonOptions#startupTimeout()}. Kiln's own warm-up batches are the
   * loader's.
   *
   * @param gpus the worker's GPU indices; the process sees them as {@code cuda:0..} (CUDA_VISIBLE_DEVICES)
   * @throws ModelLoadException naming the model and the reason (a datatype numpy lacks, no model.py, the
   *     interpreter missing, Python's own error from importing or loading)
   */
  public static PythonModelRunner load(ModelSpec spec, List<Integer> gpus) {
    for (TensorSpec t : concat(spec.inputs(), spec.outputs())) {
      if (!PythonFrames.SUPPORTED.contains(t.datatype())) {
        throw new ModelLoadException("model " + spec.uri() + ": tensor '" + t.name() + "' is " + t.datatype()
            + ", which the " + ModelSpec.ENGINE_PYTHON + " engine does not support (numpy has no " + t.datatype()
            + " type); supported: " + PythonFrames.SUPPORTED);
      }
    }
    Path dir = spec.uri().toAbsolutePath().normalize();
    if (!Files.isRegularFile(dir.resolve(io.kiln.pools.ModelFolders.PYTHON_FILE))) {
      throw new ModelLoadException("model " + spec.uri() + ": no model.py in " + dir);
    }
    PythonOptions options = spec.python();
    String pyDevice = gpus.isEmpty() ? "cpu" : "cuda:0";
    PythonProcess process = PythonProcess.start(dir, options, gpus, spec.intraOpThreads(), label(spec));
    try {
      ObjectNode load = PythonFrames.header("load", 0);
      load.put("class", options.className());
      load.put("model_dir", dir.toString());
      load.set("config", PythonFrames.json().valueToTree(options.config()));
      load.put("device", pyDevice);
      load.set("inputs", specs(spec.inputs()));
      load.set("outputs", specs(spec.outputs()));
      load.put("streaming", spec.streaming());
      PythonFrames.Frame ready = process.exchange(load, List.of(), options.startupTimeout(), "loaded");
      String version = "Python " + ready.header().path("python").asText("?") + ", numpy "
          + ready.header().path("numpy").asText("?");
      return new PythonModelRunner(spec, process, gpus.isEmpty() ? "cpu()" : "gpu(" + gpus.get(0) + ")", version);
    } catch (ModelExecutionException e) {
      process.close();
      java.util.regex.Matcher m = NO_MODULE.matcher(e.getMessage());
      if (m.find()) { // imported while loading (inside a function, or a try the check left alone)
        PythonModules.Result r = PythonModules.check(process.interpreter(), process.environment(),
            List.of(m.group(1).split("\\.")[0]));
        if (r != null && !r.missing().isEmpty()) {
          throw new ModelLoadException(PythonModules.missingMessage(spec.uri().toString(), process.interpreter(), r,
              process.environment()) + " (raised while loading: " + m.group() + ")", e);
        }
      }
      throw new ModelLoadException("model " + spec.uri() + " (class " + options.className() + " of " + dir.resolve(io.kiln.pools.ModelFolders.PYTHON_FILE)
          + ") did not load: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      process.close();
      throw e;
    }
  }

  // The worker's actor name when loaded by a worker (what the pool's logs call it), else the folder.
  private static String label(ModelSpec spec) {
    try {
      String name = ActorContext.current().name();
      if (name != null) {
        return name;
      }
    } catch (IllegalStateException notInAnActor) {
      // a direct load (tests, tools)
    }
    Path file = spec.uri().toAbsolutePath().normalize().getFileName();
    return file == null ? spec.uri().toString() : file.toString();
  }

  private static ArrayNode specs(List<TensorSpec> specs) {
    ArrayNode list = PythonFrames.json().createArrayNode();
    for (TensorSpec s : specs) {
      ObjectNode o = list.addObject();
      o.put("name", s.name());
      o.put("datatype", s.datatype().name());
      ArrayNode shape = o.putArray("shape");
      for (long d : s.shape()) {
        shape.add(d);
      }
    }
    return list;
  }

  /** The process is killed at once on close: that is what ends a call stuck in it (its pipe closes). */
  @Override
  protected boolean releasesUnderACall() {
    return true;
  }

  public String device() {
    return device;
  }

  public String engineVersion() {
    return engineVersion;
  }

  long pid() {
    return process.pid();
  }

  @Override
  public OptionalLong processId() {
    return OptionalLong.of(process.pid());
  }

  /**
   * The resident memory of the worker's Python process (its {@code VmRSS} in {@code /proc}): the model, whatever it
   * allocated and the interpreter, live at each call; empty where {@code /proc} does not say (not Linux, or the
   * process is gone).
   */
  @Override
  public OptionalLong memoryBytes() {
    return ProcessMemory.residentBytes(process.pid());
  }

  @Override
  protected List<Tensor> forward(List<Tensor> inputs) {
    PythonFrames.Frame reply = process.exchange(PythonFrames.header("predict", 0), inputs, options.requestTimeout(),
        "result");
    if (reply.op().equals("error")) {
      throw new InferenceException(InferenceException.Kind.INTERNAL, "model " + spec().uri() + ": predict raised "
          + PythonFrames.describeError(reply.header()));
    }
    return named(reply);
  }

  @Override
  public ChunkStream open(InferenceRequest request) {
    if (!spec().streaming()) {
      throw InferenceException.invalid("model " + spec().uri() + " does not stream (model.streaming is false)");
    }
    List<Tensor> inputs = streamInputs(request);
    PythonFrames.Frame opened = process.exchange(PythonFrames.header("stream_open", 0), inputs,
        options.requestTimeout(), "stream_opened");
    if (opened.op().equals("error")) {
      throw new InferenceException(InferenceException.Kind.INTERNAL, "model " + spec().uri()
          + ": predict_stream raised " + PythonFrames.describeError(opened.header()));
    }
    long stream = opened.header().path("stream").asLong(-1);
    return new ChunkStream() {
      private boolean over;

      @Override
      public List<Tensor> next() {
        if (over) {
          return null;
        }
        ObjectNode h = PythonFrames.header("stream_next", 0);
        h.put("stream", stream);
        PythonFrames.Frame f = process.exchange(h, List.of(), options.requestTimeout(), NEXT_REPLIES);
        if (f.op().equals("error")) {
          over = true;
          throw new InferenceException(InferenceException.Kind.INTERNAL, "model " + spec().uri()
              + ": predict_stream raised " + PythonFrames.describeError(f.header()));
        }
        if (f.op().equals("stream_end")) {
          over = true;
          return null;
        }
        return chunkOutputs(request, named(f));
      }

      @Override
      public void close() {
        if (over) {
          return;
        }
        over = true;
        if (process.alive()) {
          ObjectNode h = PythonFrames.header("stream_close", 0);
          h.put("stream", stream);
          process.exchange(h, List.of(), options.requestTimeout(), "stream_closed");
        }
      }
    };
  }

  private static final java.util.Set<String> NEXT_REPLIES = java.util.Set.of("chunk", "stream_end");

  private List<Tensor> named(PythonFrames.Frame reply) {
    List<TensorSpec> declared = spec().outputs();
    List<Tensor> outputs = reply.tensors();
    List<Tensor> named = new ArrayList<>(outputs.size());
    for (int i = 0; i < outputs.size(); i++) {
      if (i >= declared.size() || !outputs.get(i).name().equals(declared.get(i).name())) {
        throw new ModelExecutionException("the Python worker of model " + spec().uri() + " returned outputs "
            + outputs.stream().map(Tensor::name).toList() + ", not the declared " + declared);
      }
      named.add(outputs.get(i));
    }
    return named;
  }

  /** A batch that raised leaves the process going; one that killed it (died, hung, garbled its reply) does not. */
  @Override
  public boolean usable() {
    return super.usable() && process.alive();
  }

  @Override
  protected void release() {
    process.close();
  }

  private static List<TensorSpec> concat(List<TensorSpec> a, List<TensorSpec> b) {
    List<TensorSpec> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
