package io.kiln.engines.builtin.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Diagnostic models: built-in models ({@code engine: Builtin}) that misbehave on purpose, so that
 * reliability, overload and queueing tests can kill or hold a worker exactly when they mean to. They are
 * <b>never for production</b>: a worker that loads one logs a WARN saying so. Their uris are fixed (tests and
 * the reliability suite's YAML name them):
 *
 * <ul>
 *   <li>{@value #CRASH_ON_NAN}: the identity, except that a batch in which any FP32 or FP64 input element is
 *       NaN throws a {@link ModelExecutionException} (not an {@code InferenceException}), as a crashing
 *       worker would. Reliability tests send one such request to kill a worker mid-batch.
 *   <li>{@value #SLEEP}: the identity, after holding its worker as many milliseconds as the largest element of
 *       the batch's first input (capped at {@value #MAX_SLEEP_MILLIS} ms; NaN, negative and BOOL count as 0), as
 *       a model of that cost would. Overload and queueing tests use it to set a pool's capacity exactly.
 * </ul>
 *
 * Both accept whatever inputs the spec declares (any datatype but BYTES); their outputs take the spec's
 * output names when it declares outputs (one per input, same datatypes), the input names otherwise, as
 * {@link BuiltinModels#IDENTITY}'s do.
 */
public final class DiagnosticModels {

  public static final String CRASH_ON_NAN = "builtin:crash-on-nan";
  public static final String SLEEP = "builtin:sleep";
  public static final long MAX_SLEEP_MILLIS = 10_000;
  public static final List<String> NAMES = List.of(CRASH_ON_NAN, SLEEP);

  private static final Logger LOG = LoggerFactory.getLogger(DiagnosticModels.class);

  private DiagnosticModels() {
  }

  /** Loads the diagnostic model {@code spec} names, warning in the log that it misbehaves on purpose. */
  public static AbstractModelRunner create(ModelSpec spec, List<TensorSpec> outputs) {
    String name = spec.uri().toString();
    AbstractModelRunner runner = switch (name) {
      case CRASH_ON_NAN -> new CrashOnNanRunner(spec, outputs);
      case SLEEP -> new SleepRunner(spec, outputs);
      default -> throw new IllegalArgumentException("uri: '" + name + "' is no diagnostic model, expected one of "
          + NAMES);
    };
    LOG.warn(warning(name));
    return runner;
  }

  /** The WARN a worker logs when it loads {@code name}. */
  static String warning(String name) {
    String what = name.equals(CRASH_ON_NAN) ? "it crashes on purpose; for reliability tests only"
        : "it holds its worker on purpose; for overload and queueing tests only";
    return "diagnostic model " + name + " loaded: " + what;
  }

  private static final class CrashOnNanRunner extends BuiltinModels.IdentityRunner {

    CrashOnNanRunner(ModelSpec spec, List<TensorSpec> outputs) {
      super(spec, outputs);
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      for (Tensor t : inputs) {
        if (containsNan(t)) {
          throw new ModelExecutionException("simulated worker crash: input '" + t.name() + "' contains NaN ("
              + CRASH_ON_NAN + ")");
        }
      }
      return super.forward(inputs);
    }
  }

  private static final class SleepRunner extends BuiltinModels.IdentityRunner {

    SleepRunner(ModelSpec spec, List<TensorSpec> outputs) {
      super(spec, outputs);
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      if (!inputs.isEmpty()) {
        long millis = Math.min(MAX_SLEEP_MILLIS, largestMillis(inputs.get(0)));
        long end = System.nanoTime() + millis * 1_000_000L;
        for (long left = millis * 1_000_000L; left > 0; left = end - System.nanoTime()) {
          LockSupport.parkNanos(left);
          if (Thread.currentThread().isInterrupted()) {
            throw new ModelExecutionException("interrupted while sleeping (" + SLEEP + ")");
          }
        }
      }
      return super.forward(inputs);
    }
  }

  /** The largest element of {@code t} read as milliseconds; 0 for none, NaN, negatives, BOOL and BYTES. */
  static long largestMillis(Tensor t) {
    ByteBuffer buf = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    int size = switch (t.datatype()) {
      case INT8, UINT8 -> 1;
      case INT16, UINT16, FP16, BF16 -> 2;
      case INT32, UINT32, FP32 -> 4;
      case INT64, UINT64, FP64 -> 8;
      default -> 0;
    };
    double max = 0;
    for (int i = 0; size > 0 && i + size <= t.data().length; i += size) {
      double v = switch (t.datatype()) {
        case INT8 -> buf.get(i);
        case UINT8 -> buf.get(i) & 0xff;
        case INT16 -> buf.getShort(i);
        case UINT16 -> buf.getShort(i) & 0xffff;
        case INT32 -> buf.getInt(i);
        case UINT32 -> buf.getInt(i) & 0xffffffffL;
        case INT64, UINT64 -> buf.getLong(i);
        case FP32 -> buf.getFloat(i);
        case FP64 -> buf.getDouble(i);
        default -> 0; // half floats: not worth decoding for a test model
      };
      if (v > max) {
        max = v;
      }
    }
    return (long) Math.min(max, MAX_SLEEP_MILLIS);
  }

  static boolean containsNan(Tensor t) {
    ByteBuffer buf = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    if (t.datatype() == DataType.FP32) {
      for (int i = 0; i + 4 <= t.data().length; i += 4) {
        if (Float.isNaN(buf.getFloat(i))) {
          return true;
        }
      }
    } else if (t.datatype() == DataType.FP64) {
      for (int i = 0; i + 8 <= t.data().length; i += 8) {
        if (Double.isNaN(buf.getDouble(i))) {
          return true;
        }
      }
    }
    return false;
  }
}
