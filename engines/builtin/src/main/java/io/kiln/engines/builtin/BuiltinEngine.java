package io.kiln.engines.builtin;

import io.kiln.engines.builtin.impl.BuiltinModels;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * Kiln's built-in models ({@link BuiltinModels}: {@code builtin:identity}, the streaming {@code builtin:chunks},
 * the diagnostic ones), without an engine or files; they run on the CPU.
 * They hold no weights: they report 0 bytes.
 */
public final class BuiltinEngine implements Engine {

  private static final Capabilities CAPABILITIES = new Capabilities(true, BuiltinModels.STREAMING.toString(), false,
      false, List.of(), "");

  @Override
  public String name() {
    return ModelSpec.ENGINE_BUILTIN;
  }

  @Override
  public Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public boolean recognizes(String fileName) {
    return false;
  }

  @Override
  public List<SpecProblem> check(SpecFields spec) {
    List<SpecProblem> problems = new ArrayList<>();
    String unknown = BuiltinModels.unknownName(spec.uri());
    if (unknown != null) {
      problems.add(new SpecProblem("uri", unknown));
    }
    if (spec.streaming() && !BuiltinModels.STREAMING.contains(spec.uri())) {
      problems.add(new SpecProblem("streaming", "'" + spec.uri() + "' does not stream; the streaming built-ins are "
          + BuiltinModels.STREAMING));
    }
    if (!spec.format().equals(ModelSpec.FORMAT_AUTO)) {
      problems.add(new SpecProblem("format", "built-in models have no file format, got '" + spec.format() + "'"));
    }
    if (!spec.architecture().isEmpty()) {
      problems.add(new SpecProblem("architecture", "built-in models take none, got '" + spec.architecture() + "'"));
    }
    List<io.kiln.pools.TensorSpec> inputs = spec.inputs();
    List<io.kiln.pools.TensorSpec> outputs = spec.outputs();
    if (!outputs.isEmpty() && outputs.size() != inputs.size()) {
      problems.add(new SpecProblem("outputs", "a built-in returns its inputs, so it needs " + inputs.size()
          + " outputs (or none), got " + outputs.size()));
    } else {
      for (int i = 0; i < outputs.size(); i++) {
        if (outputs.get(i).datatype() != inputs.get(i).datatype()) {
          problems.add(new SpecProblem("outputs", "'" + outputs.get(i).name() + "' must have the datatype of input '"
              + inputs.get(i).name() + "' (" + inputs.get(i).datatype() + ")"));
          break;
        }
      }
    }
    return problems;
  }

  @Override
  public boolean alwaysStreams(SpecFields spec) {
    return BuiltinModels.STREAMING.contains(spec.uri()); // the name says it streams, so the field need not
  }

  @Override
  public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
    return new Loaded(BuiltinModels.create(spec), "cpu()", "", "builtin", OptionalLong.of(0));
  }

  @Override
  public String platform(ModelSpec spec) {
    return "kiln_builtin";
  }
}
