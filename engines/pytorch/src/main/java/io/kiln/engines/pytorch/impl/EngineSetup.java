package io.kiln.engines.pytorch.impl;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.pytorch.jni.LibUtils;
import io.kiln.engines.pytorch.PyTorchEngine;
import io.kiln.pools.ModelSpec;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Process-wide engine settings and device choice. PyTorch sizes its thread pools once, when DJL starts
 * the engine, from system properties; Kiln sets them from the first spec that asks, and only if nobody
 * (e.g. {@code -Dai.djl.pytorch.num_threads} on the command line) set them already. It also turns on
 * DJL's offline mode so that nothing is ever downloaded: the native library comes from the
 * {@code pytorch-native-cpu} jar on the class path and is unpacked into {@code DJL_CACHE_DIR}
 * (default {@code ~/.djl.ai}), which Kiln leaves alone.
 */
public final class EngineSetup {

  /** DJL's name for its PyTorch engine (what {@link PyTorchEngine} runs), as {@code Engine.getEngine} takes it. */
  public static final String ENGINE = "PyTorch";
  static final String NUM_THREADS = "ai.djl.pytorch.num_threads";
  static final String NUM_INTEROP_THREADS = "ai.djl.pytorch.num_interop_threads";
  static final String OFFLINE = "ai.djl.offline";
  private static final Logger log = LoggerFactory.getLogger(EngineSetup.class);
  private static boolean announced;

  private EngineSetup() {
  }

  /**
   * Applies the spec's thread counts (if not already set) and offline mode, then starts (or returns the
   * already started) PyTorch engine. Synchronized so that two workers loading at once agree on one value.
   */
  public static Engine pytorch(ModelSpec spec) {
    return pytorch(spec.intraOpThreads(), spec.interOpThreads());
  }

  /** As {@link #pytorch(ModelSpec)}, with thread counts given directly (0 = engine default). */
  public static synchronized Engine pytorch(int intraOpThreads, int interOpThreads) {
    if (System.getProperty(OFFLINE) == null) {
      System.setProperty(OFFLINE, "true");
    }
    applyThreads(NUM_THREADS, intraOpThreads);
    applyThreads(NUM_INTEROP_THREADS, interOpThreads);
    Engine engine = Engine.getEngine(ENGINE);
    if (!announced) {
      announced = true;
      log.info("PyTorch engine {}: libtorch from {}", engine.getVersion(), LibUtils.getLibtorchPath());
    }
    // An engine started earlier (by a spec without thread counts) keeps its pools: say so rather than pretend.
    warnIfDifferent("intra-op", intraOpThreads, JniUtils.getNumThreads());
    warnIfDifferent("inter-op", interOpThreads, JniUtils.getNumInteropThreads());
    return engine;
  }

  private static void warnIfDifferent(String what, int wanted, int actual) {
    if (wanted != 0 && wanted != actual) {
      log.warn("PyTorch runs {} {} threads for this process (fixed when the engine started); the spec's {} is not applied",
          actual, what, wanted);
    }
  }

  private static void applyThreads(String property, int wanted) {
    if (wanted == 0) {
      return;
    }
    String current = System.getProperty(property);
    if (current == null) {
      System.setProperty(property, Integer.toString(wanted));
    } else if (!current.equals(Integer.toString(wanted))) {
      log.warn("{} is already {} for this process (PyTorch thread pools are process-wide); the spec's {} is ignored",
          property, current, wanted);
    }
  }

  /** A device and why it was chosen. */
  public record DeviceChoice(Device device, String reason) {
  }

  /** The PyTorch native library as the engine presents it, for messages. */
  public static String nativeLibrary(Engine engine) {
    return "PyTorch " + engine.getVersion() + " from " + LibUtils.getLibtorchPath() + (engine.getGpuCount() == 0
        ? ", which sees no CUDA device (a CPU-only build such as pytorch-native-cpu, or no usable driver)" : "");
  }

  static final String GPU_DOC = io.kiln.pools.spi.EngineChecks.GPU_DOC;

  /**
   * The first assigned GPU when the engine has every assigned index; the CPU when none is assigned, or
   * when one is missing and {@code allowCpuFallback}; otherwise a load failure naming the cause.
   *
   * @param gpuIndices GPU indices assigned to the worker (may be empty)
   * @param engineGpuCount how many CUDA devices the engine reports
   * @param nativeLibrary what the engine runs, for the message (e.g. {@code pytorch-native-cpu 2.7.1})
   * @throws io.kiln.pools.ModelLoadException for a GPU the engine lacks, without {@code allowCpuFallback}
   */
  public static DeviceChoice chooseDevice(List<Integer> gpuIndices, int engineGpuCount, String nativeLibrary,
                                          boolean allowCpuFallback) {
    DeviceChoice choice = chooseDevice(gpuIndices, engineGpuCount);
    if (!gpuIndices.isEmpty() && choice.device().equals(Device.cpu())) {
      String why = choice.reason() + "; the native library is " + nativeLibrary;
      if (!allowCpuFallback) {
        throw new io.kiln.pools.ModelLoadException(why + ". Kiln does not run a GPU worker on the CPU unless the model"
            + " sets allow_cpu_fallback: true; " + GPU_DOC);
      }
      log.warn("{}: running on the CPU because the model sets allow_cpu_fallback", why);
      return new DeviceChoice(Device.cpu(), why + " (allow_cpu_fallback: true)");
    }
    return choice;
  }

  /** As {@link #chooseDevice(List, int, String, boolean)}, reporting the CPU for a missing GPU (never throws). */
  static DeviceChoice chooseDevice(List<Integer> gpuIndices, int engineGpuCount) {
    if (gpuIndices.isEmpty()) {
      return new DeviceChoice(Device.cpu(), "no GPU assigned to this worker");
    }
    for (int index : gpuIndices) {
      if (index < 0) {
        throw new IllegalArgumentException("gpuIndices: negative GPU index " + index);
      }
      if (index >= engineGpuCount) {
        return new DeviceChoice(Device.cpu(), "GPU " + index + " assigned but the " + ENGINE + " engine reports "
            + engineGpuCount + " CUDA device(s)" + (engineGpuCount == 0 ? " (CPU-only native library?)" : ""));
      }
    }
    return new DeviceChoice(Device.gpu(gpuIndices.get(0)), "GPU " + gpuIndices.get(0) + " assigned"
        + (gpuIndices.size() > 1 ? " (a model runs on one device; the other indices stay unused)" : ""));
  }
}
