package io.kiln.engines.llm.impl;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.LoggerFactory;

/** Opens ONNX Runtime sessions on the CPU for the LLM engines, as Kiln's OnnxRuntime engine does. */
final class OrtSessions {

  private OrtSessions() {
  }

  /**
   * A CPU session over {@code file} with the spec's thread counts. A worker assigned a GPU fails (this engine runs
   * on the CPU) unless the spec allows the CPU fallback.
   *
   * @throws ModelLoadException naming the model and the cause
   */
  static OrtSession open(ModelSpec spec, String engine, Path file, List<Integer> gpus) {
    if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
      throw new ModelLoadException("the " + engine + " engine needs a little-endian host");
    }
    if (!gpus.isEmpty()) {
      String why = "model " + spec.uri() + ": GPU " + gpus + " is assigned but the " + engine
          + " engine runs on the CPU (ONNX Runtime's CPU provider)";
      if (!spec.allowCpuFallback()) {
        throw new ModelLoadException(why + "; Kiln does not fall back to the CPU unless the model sets"
            + " allow_cpu_fallback: true");
      }
      LoggerFactory.getLogger(OrtSessions.class).warn("{}; running on the CPU because the model sets"
          + " allow_cpu_fallback", why);
    }
    OrtEnvironment env;
    try {
      env = environment();
    } catch (RuntimeException | LinkageError e) {
      throw new ModelLoadException("ONNX Runtime did not start (is the onnxruntime jar on the class path?): "
          + e.getMessage(), e);
    }
    try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
      options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
      if (spec.intraOpThreads() > 0) {
        options.setIntraOpNumThreads(spec.intraOpThreads());
      }
      if (spec.interOpThreads() > 0) {
        options.setInterOpNumThreads(spec.interOpThreads());
      }
      return env.createSession(file.toString(), options);
    } catch (OrtException e) {
      throw new ModelLoadException("model " + spec.uri() + " (" + file + ") did not load into ONNX Runtime: "
          + e.getMessage(), e);
    }
  }

  /** ONNX Runtime's environment, its libraries taken from Kiln's native cache the first time (NativeCache). */
  private static OrtEnvironment environment() {
    io.kiln.pools.spi.NativeCache.onnxRuntime(OrtEnvironment.class.getClassLoader());
    return OrtEnvironment.getEnvironment();
  }

  static String version() {
    try {
      return environment().getVersion();
    } catch (RuntimeException | LinkageError e) {
      return "";
    }
  }

  static void closeQuietly(AutoCloseable c) {
    try {
      if (c != null) {
        c.close();
      }
    } catch (Exception e) {
      // native memory is released either way; nothing a caller could do
    }
  }
}
