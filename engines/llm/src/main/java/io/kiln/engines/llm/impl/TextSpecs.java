package io.kiln.engines.llm.impl;

import io.kiln.pools.ModelSignature;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;

/** The spec rules the text engines share: tensors as {@link io.kiln.pools.TextModels} says, no format. Pure. */
public final class TextSpecs {

  private TextSpecs() {
  }

  /**
   * Problems of {@code spec} for an engine whose models keep {@code contract}: declared inputs and outputs must be
   * the contract's (outputs may be a subset, in any order), no format or architecture.
   */
  public static List<SpecProblem> check(String engine, ModelSignature contract, SpecFields spec) {
    List<SpecProblem> problems = new ArrayList<>();
    if (!spec.format().equals(ModelSpec.FORMAT_AUTO)) {
      problems.add(new SpecProblem("format", "a " + engine + " model is an ONNX export with its tokenizer, remove '"
          + spec.format() + "'"));
    }
    if (!spec.architecture().isEmpty()) {
      problems.add(new SpecProblem("architecture", "a " + engine + " model carries its own in its model.onnx,"
          + " remove '" + spec.architecture() + "'"));
    }
    if (!spec.inputs().isEmpty()) {
      if (spec.inputs().size() != 1 || !fits(spec.inputs().get(0), contract.inputs())) {
        problems.add(new SpecProblem("inputs", "a " + engine + " model takes " + describe(contract.inputs())
            + "; leave inputs out to get it"));
      }
      if (spec.outputs().isEmpty()) {
        problems.add(new SpecProblem("outputs", "a " + engine + " model that declares its inputs must declare its"
            + " outputs too, some of " + describe(contract.outputs()) + " (or leave both out)"));
      }
    }
    for (TensorSpec o : spec.outputs()) {
      if (!fits(o, contract.outputs())) {
        problems.add(new SpecProblem("outputs", "a " + engine + " model has no output " + o + "; its outputs are "
            + describe(contract.outputs())));
      }
    }
    if (!spec.inputs().isEmpty() && spec.streaming() != contract.streaming()) {
      problems.add(new SpecProblem("streaming", contract.streaming()
          ? "a " + engine + " model streams its answer: set streaming: true (or leave inputs out)"
          : "a " + engine + " model answers in one piece: remove streaming"));
    }
    return problems;
  }

  private static boolean fits(TensorSpec t, List<TensorSpec> allowed) {
    return allowed.stream().anyMatch(a -> a.name().equals(t.name()) && a.datatype() == t.datatype()
        && a.shape().length == t.shape().length);
  }

  private static String describe(List<TensorSpec> tensors) {
    return String.join(", ", tensors.stream().map(t -> t.name() + " " + t.datatype() + " rank " + t.shape().length)
        .toList());
  }
}
