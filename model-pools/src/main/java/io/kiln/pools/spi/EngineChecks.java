package io.kiln.pools.spi;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;

/** Spec checks and messages more than one engine shares. Stateless; the methods are pure and never throw. */
public final class EngineChecks {

  /** What a GPU worker's load says when its engine cannot use the GPU; the user's guide to the fix. */
  public static final String GPU_DOC = "see docs/gpu.md";

  private EngineChecks() {
  }

  /**
   * An engine whose model file carries its own architecture and format (a Python model is its {@code model.py},
   * an ONNX model its graph): outputs declared, no format, no architecture.
   *
   * @param what the model, for messages ({@code a Python}, {@code an OnnxRuntime})
   * @param file the file that describes it, for messages
   */
  public static List<SpecProblem> selfDescribing(String what, String file, SpecFields spec) {
    List<SpecProblem> problems = new ArrayList<>();
    if (spec.outputs().isEmpty()) {
      problems.add(new SpecProblem("outputs", what + " model needs at least one output"));
    }
    if (!spec.format().equals(ModelSpec.FORMAT_AUTO)) {
      problems.add(new SpecProblem("format", what + " model is its " + file + ", remove '" + spec.format() + "'"));
    }
    if (!spec.architecture().isEmpty()) {
      problems.add(new SpecProblem("architecture", what + " model carries its own in its " + file + ", remove '"
          + spec.architecture() + "'"));
    }
    return problems;
  }

  /** The problem an {@link IllegalArgumentException} of the form {@code field: message} states. */
  public static SpecProblem problem(String field, IllegalArgumentException e) {
    String m = e.getMessage();
    return new SpecProblem(field, m.startsWith(field + ": ") ? m.substring(field.length() + 2) : m);
  }
}
