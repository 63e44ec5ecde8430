package io.kiln.engines.onnxruntime.impl;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import io.kiln.pools.spi.ByteElements;
import io.kiln.pools.spi.EngineChecks;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/**
 * Runs an ONNX model through ONNX Runtime's Java API, one session per worker (so thread counts are the
 * worker's own, unlike PyTorch's process-wide pools). The model's own signature is checked against the spec
 * when the session opens: every declared input and output must exist with the same datatype and rank, and
 * every dimension the model fixes must be the one the spec declares.
 *
 * <p>A worker assigned a GPU gets ONNX Runtime's CUDA execution provider on that device, or fails to load
 * with the reason; it never falls back to the CPU.
 */
public final class OnnxModelRunner extends AbstractModelRunner {

  static final String ENGINE = ModelSpec.ENGINE_ONNX;
  public static final String FORMAT = "onnx";
  /** The file a model folder holds. */
  static final String MODEL_FILE = io.kiln.pools.ModelFolders.ONNX_FILE;
  /** The largest input buffer kept for the next call; a larger input gets a buffer of its own each call. */
  static final int KEPT_INPUT_BYTES = 16 << 20;

  private final OrtEnvironment env;
  private final OrtSession session;
  private final String device;
  private final Set<String> outputNames;
  private final long fileBytes;
  /**
   * Each input's direct buffer, kept from call to call (up to {@link #KEPT_INPUT_BYTES}): a fresh
   * {@code allocateDirect} per call is zeroed, and its native memory is freed only when a garbage collection finds
   * the buffer, so every call touched new pages (issue #36: a 1.47 MB input per request). The worker's thread alone
   * uses them, as it alone calls a runner, and ONNX Runtime is done with them when {@link #forward} returns.
   */
  private final ByteBuffer[] inputBuffers;

  private OnnxModelRunner(ModelSpec spec, OrtEnvironment env, OrtSession session, String device, long fileBytes) {
    super(spec, spec.outputs());
    this.fileBytes = fileBytes;
    this.env = env;
    this.session = session;
    this.device = device;
    this.outputNames = new LinkedHashSet<>(spec.outputs().stream().map(TensorSpec::name).toList());
    this.inputBuffers = new ByteBuffer[spec.inputs().size()];
  }

  /**
   * Opens {@code file} in a session on the CPU or, with GPU indices, on the first one through CUDA.
   *
   * @throws ModelLoadException naming the model and what does not fit
   */
  public static OnnxModelRunner load(ModelSpec spec, java.nio.file.Path file, List<Integer> gpus) {
    if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
      throw new ModelLoadException("Kiln's tensors are little-endian; ONNX Runtime takes them in native order and"
          + " this host is big-endian");
    }
    OrtEnvironment env;
    try {
      env = environment();
    } catch (RuntimeException | LinkageError e) {
      throw new ModelLoadException("the " + ENGINE + " engine did not start (is the onnxruntime jar on the class"
          + " path?): " + e.getMessage(), e);
    }
    String device = gpus.isEmpty() ? "cpu()" : "gpu(" + gpus.get(0) + ")";
    OrtSession session;
    try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
      options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
      if (spec.intraOpThreads() > 0) {
        options.setIntraOpNumThreads(spec.intraOpThreads());
      }
      if (spec.interOpThreads() > 0) {
        options.setInterOpNumThreads(spec.interOpThreads());
      }
      if (!gpus.isEmpty()) {
        try {
          options.addCUDA(gpus.get(0));
        } catch (OrtException e) {
          String why = "model " + spec.uri() + ": GPU " + gpus.get(0) + " is assigned but ONNX Runtime cannot use CUDA"
              + " here (providers: " + OrtEnvironment.getAvailableProviders() + "): " + e.getMessage();
          if (!spec.allowCpuFallback()) {
            throw new ModelLoadException(why + "; Kiln does not fall back to the CPU unless the model sets"
                + " allow_cpu_fallback: true; " + EngineChecks.GPU_DOC, e);
          }
          org.slf4j.LoggerFactory.getLogger(OnnxModelRunner.class).warn("{}; running on the CPU because the model"
              + " sets allow_cpu_fallback", why);
          device = "cpu()";
        }
      }
      session = env.createSession(file.toString(), options);
    } catch (OrtException e) {
      throw new ModelLoadException("model " + spec.uri() + " (" + file + ") did not load into " + ENGINE + ": "
          + e.getMessage(), e);
    }
    try {
      OnnxSignature.check(spec, session.getInputInfo(), session.getOutputInfo());
    } catch (OrtException | RuntimeException e) {
      closeQuietly(session);
      if (e instanceof ModelLoadException mle) {
        throw mle;
      }
      throw new ModelLoadException("model " + spec.uri() + ": cannot read its signature: " + e.getMessage(), e);
    }
    long bytes;
    try {
      bytes = java.nio.file.Files.size(file);
    } catch (java.io.IOException e) {
      bytes = -1;
    }
    return new OnnxModelRunner(spec, env, session, device, bytes);
  }

  /**
   * The {@code .onnx} file's size: the model's weights as stored (initializers dominate it), which the session holds
   * in memory. A lower bound: ONNX Runtime's arena and optimised copies come on top and are not reported.
   */
  @Override
  public OptionalLong memoryBytes() {
    return fileBytes < 0 ? OptionalLong.empty() : OptionalLong.of(fileBytes);
  }

  /**
   * The {@code .onnx} file of a spec: its uri when that is one, else {@value #MODEL_FILE} in the folder, else
   * the folder's only {@code .onnx} file.
   *
   * @throws ModelLoadException saying what the folder holds instead
   */
  public static java.nio.file.Path modelFile(ModelSpec spec) {
    java.nio.file.Path uri = spec.uri();
    if (java.nio.file.Files.isRegularFile(uri)) {
      if (!uri.getFileName().toString().endsWith(".onnx")) {
        throw new ModelLoadException("model file " + uri + " is not an .onnx file");
      }
      return uri;
    }
    if (!java.nio.file.Files.isDirectory(uri)) {
      throw new ModelLoadException("model uri " + uri + " (" + uri.toAbsolutePath() + ") does not exist");
    }
    java.nio.file.Path named = uri.resolve(MODEL_FILE);
    if (java.nio.file.Files.isRegularFile(named)) {
      return named;
    }
    List<java.nio.file.Path> found;
    try (var files = java.nio.file.Files.list(uri)) {
      found = files.filter(p -> p.getFileName().toString().endsWith(".onnx")).sorted().toList();
    } catch (java.io.IOException e) {
      throw new ModelLoadException("cannot list model folder " + uri + ": " + e.getMessage(), e);
    }
    if (found.size() != 1) {
      throw new ModelLoadException("model folder " + uri + (found.isEmpty() ? " holds no .onnx file"
          : " holds several .onnx files " + found.stream().map(p -> p.getFileName().toString()).toList())
          + "; name the model " + MODEL_FILE + " or point uri at the file");
    }
    return found.get(0);
  }

  public String device() {
    return device;
  }

  /** ONNX Runtime's environment, its libraries taken from Kiln's native cache the first time (NativeCache). */
  private static OrtEnvironment environment() {
    io.kiln.pools.spi.NativeCache.onnxRuntime(OrtEnvironment.class.getClassLoader());
    return OrtEnvironment.getEnvironment();
  }

  public static String version() {
    try {
      return environment().getVersion();
    } catch (RuntimeException e) {
      return "";
    }
  }

  /** ONNX graphs keep their weights as initializers, which the session does not count for us. */
  public OptionalLong parameterCount() {
    return OptionalLong.empty();
  }

  @Override
  protected List<Tensor> forward(List<Tensor> inputs) {
    Map<String, OnnxTensor> feed = new LinkedHashMap<>();
    try {
      for (int i = 0; i < inputs.size(); i++) {
        Tensor t = inputs.get(i);
        if (t.datatype() == DataType.BYTES) {
          feed.put(spec().inputs().get(i).name(), OnnxTensor.createTensor(env, ByteElements.strings(t), t.shape()));
          continue;
        }
        ByteBuffer data = inputBuffer(i, t.data().length);
        data.put(t.data()).flip();
        feed.put(spec().inputs().get(i).name(), OnnxTensor.createTensor(env, data, t.shape(),
            OnnxSignature.javaType(t.datatype())));
      }
      try (OrtSession.Result result = session.run(feed, outputNames)) {
        List<Tensor> out = new ArrayList<>(spec().outputs().size());
        for (TensorSpec declared : spec().outputs()) {
          OnnxValue value = result.get(declared.name()).orElseThrow(() ->
              new ModelExecutionException("the model returned no output '" + declared.name() + "'"));
          if (!(value instanceof OnnxTensor tensor)) {
            throw new ModelExecutionException("output '" + declared.name() + "' is not a tensor but " + value.getType());
          }
          TensorInfo info = (TensorInfo) tensor.getInfo();
          DataType type = OnnxSignature.kilnType(info.type, declared);
          long[] shape = info.getShape();
          if (type == DataType.BYTES) {
            out.add(new Tensor(declared.name(), type, shape, ByteElements.joinStrings(strings(tensor.getValue()))));
            continue;
          }
          out.add(new Tensor(declared.name(), type, shape, heapBytes(tensor)));
        }
        return out;
      }
    } catch (OrtException e) {
      throw new ModelExecutionException("the " + ENGINE + " engine failed: " + e.getMessage(), e);
    } finally {
      feed.values().forEach(OnnxTensor::close);
    }
  }

  /** A cleared native-order direct buffer of at least {@code bytes} for input {@code i}, limited to {@code bytes}. */
  private ByteBuffer inputBuffer(int i, int bytes) {
    ByteBuffer kept = inputBuffers[i];
    if (kept != null && kept.capacity() >= bytes) {
      kept.clear().limit(bytes);
      return kept;
    }
    ByteBuffer fresh = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    if (bytes <= KEPT_INPUT_BYTES) {
      inputBuffers[i] = fresh;
    }
    return fresh;
  }

  /**
   * An output's bytes in a Java array: one copy out of ONNX Runtime's memory, which the result frees when closed.
   * {@code getByteBuffer} already copies into a fresh heap buffer of exactly the tensor's size; its array is taken
   * as it is rather than copied a second time.
   */
  static byte[] heapBytes(OnnxTensor tensor) {
    ByteBuffer bytes = tensor.getByteBuffer();
    if (bytes.hasArray() && bytes.arrayOffset() == 0 && bytes.position() == 0
        && bytes.remaining() == bytes.array().length) {
      return bytes.array();
    }
    byte[] raw = new byte[bytes.remaining()];
    bytes.get(raw);
    return raw;
  }

  /** A string tensor's value (a String, or String arrays nested to its rank) flattened in row-major order. */
  private static String[] strings(Object value) {
    List<String> flat = new ArrayList<>();
    flatten(value, flat);
    return flat.toArray(String[]::new);
  }

  private static void flatten(Object value, List<String> into) {
    if (value instanceof String s) {
      into.add(s);
    } else if (value instanceof Object[] array) {
      for (Object e : array) {
        flatten(e, into);
      }
    } else {
      throw new ModelExecutionException("a string output held " + (value == null ? "null" : value.getClass()));
    }
  }

  @Override
  protected void release() {
    closeQuietly(session);
  }

  private static void closeQuietly(OrtSession s) {
    try {
      s.close();
    } catch (OrtException e) {
      // the session's native memory is released either way; nothing a caller could do
    }
  }
}
