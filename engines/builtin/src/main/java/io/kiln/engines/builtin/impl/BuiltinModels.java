package io.kiln.engines.builtin.impl;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Models that need no engine ({@code engine: Builtin}), named by their uri:
 *
 * <ul>
 *   <li>{@value #IDENTITY}: returns every input unchanged as the output at the same position. Gateway
 *       benchmarks serve it to measure Kiln's own overhead, without a model's cost.
 *   <li>{@value #CHUNKS}: a streaming model (see {@link ChunksRunner}): answers each request with N chunks,
 *       chunk {@code i} being the inputs plus {@code i}, with a delay between chunks; streaming tests, demos and
 *       benchmarks of the streaming path serve it.
 * </ul>
 *
 * The same engine also runs the {@link DiagnosticModels} ({@code builtin:crash-on-nan}, {@code builtin:sleep}),
 * models that fail or stall on purpose for reliability tests; they are not listed here, but
 * {@link #checkName} accepts their names too.
 *
 * <p>The identity accepts whatever inputs the spec declares (any datatype, BYTES included); its outputs take the
 * spec's output names when it declares outputs (one per input, same datatypes), the input names otherwise.
 */
public final class BuiltinModels {

  public static final String IDENTITY = "builtin:identity";
  public static final String CHUNKS = "builtin:chunks";
  /** The real built-in models; the diagnostic ones are {@link DiagnosticModels#NAMES}. */
  public static final List<String> NAMES = List.of(IDENTITY, CHUNKS);
  /** The built-in models that stream (their specs stream whether they say so or not). */
  public static final List<String> STREAMING = List.of(CHUNKS);
  private static final List<String> KNOWN = known();

  private BuiltinModels() {
  }

  private static List<String> known() {
    List<String> all = new ArrayList<>(NAMES);
    all.addAll(DiagnosticModels.NAMES);
    return Collections.unmodifiableList(all);
  }

  /**
   * Checks a {@code builtin:} uri: one of {@link #NAMES} or of {@link DiagnosticModels#NAMES}.
   *
   * @throws IllegalArgumentException if {@code uri} names no built-in model
   */
  public static void checkName(String uri) {
    String unknown = unknownName(uri);
    if (unknown != null) {
      throw new IllegalArgumentException("uri: " + unknown);
    }
  }

  /** Null when {@code uri} names a built-in or diagnostic model, else why not (without the field name). */
  public static String unknownName(String uri) {
    return KNOWN.contains(uri) ? null : "unknown built-in model '" + uri + "', expected one of " + KNOWN;
  }

  /** Loads the built-in or diagnostic model {@code spec} names (a diagnostic one logs a warning). */
  public static AbstractModelRunner create(ModelSpec spec) {
    String name = spec.uri().toString();
    checkName(name);
    List<TensorSpec> outputs = spec.outputs().isEmpty() ? spec.inputs() : spec.outputs();
    if (DiagnosticModels.NAMES.contains(name)) {
      return DiagnosticModels.create(spec, outputs);
    }
    if (name.equals(CHUNKS)) {
      return new ChunksRunner(spec, outputs);
    }
    return new IdentityRunner(spec, outputs);
  }

  /** Returns its inputs; the diagnostic models add their failure or delay before that. */
  public static class IdentityRunner extends AbstractModelRunner {

    public IdentityRunner(ModelSpec spec, List<TensorSpec> outputs) {
      super(spec, outputs);
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      return inputs;
    }

    @Override
    protected void release() {
      // nothing is held outside the heap
    }

    /** No weights: a built-in holds nothing worth counting against a memory cap. */
    @Override
    public java.util.OptionalLong memoryBytes() {
      return java.util.OptionalLong.of(0);
    }
  }
}
