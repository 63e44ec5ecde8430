package io.kiln.pools.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * Models that need no engine ({@code engine: Builtin}), named by their uri:
 *
 * <ul>
 *   <li>{@value #IDENTITY}: returns every input unchanged as the output at the same position. Gateway
 *       benchmarks serve it to measure Kiln's own overhead, without a model's cost.
 *   <li>{@value #CRASH_ON_NAN}: the identity, except that a batch in which any FP32 or FP64 input element is
 *       NaN throws a {@link ModelExecutionException} (not an {@code InferenceException}), as a crashing
 *       worker would. Reliability tests send one such request to kill a worker mid-batch.
 * </ul>
 *
 * Both accept whatever inputs the spec declares (any datatype but BYTES); their outputs take the spec's
 * output names when it declares outputs (one per input, same datatypes), the input names otherwise.
 */
public final class BuiltinModels {

  public static final String IDENTITY = "builtin:identity";
  public static final String CRASH_ON_NAN = "builtin:crash-on-nan";
  private static final List<String> NAMES = List.of(IDENTITY, CRASH_ON_NAN);

  private BuiltinModels() {
  }

  /** @throws IllegalArgumentException if {@code uri} names no built-in model */
  public static void checkName(String uri) {
    if (!NAMES.contains(uri)) {
      throw new IllegalArgumentException("uri: unknown built-in model '" + uri + "', expected one of " + NAMES);
    }
  }

  static AbstractModelRunner create(ModelSpec spec) {
    String name = spec.uri().toString();
    checkName(name);
    List<TensorSpec> outputs = spec.outputs().isEmpty() ? spec.inputs() : spec.outputs();
    return new IdentityRunner(spec, outputs, name.equals(CRASH_ON_NAN));
  }

  private static final class IdentityRunner extends AbstractModelRunner {
    private final boolean crashOnNan;

    IdentityRunner(ModelSpec spec, List<TensorSpec> outputs, boolean crashOnNan) {
      super(spec, outputs);
      this.crashOnNan = crashOnNan;
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      if (crashOnNan) {
        for (Tensor t : inputs) {
          if (containsNan(t)) {
            throw new ModelExecutionException("simulated worker crash: input '" + t.name() + "' contains NaN ("
                + CRASH_ON_NAN + ")");
          }
        }
      }
      return inputs;
    }

    @Override
    protected void release() {
      // nothing is held outside the heap
    }
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
