package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import java.util.List;
import java.util.function.Consumer;

/**
 * Checks one request against a model's declared inputs and outputs without a loaded model, exactly as the
 * worker's runner will ({@link io.kiln.pools.ModelRunner#validate}): the pool manager runs it at submit so
 * a bad request is refused alone. Throws {@link io.kiln.pools.InferenceException} INVALID_INPUT naming
 * the input or output. Stateless after construction; thread-safe.
 */
public final class SpecValidator implements Consumer<InferenceRequest> {

  private final RequestChecker checker;

  public SpecValidator(ModelSpec spec) {
    // A built-in that declares no outputs names them like its inputs (see BuiltinModels).
    List<TensorSpec> outputs = spec.outputs().isEmpty() ? spec.inputs() : spec.outputs();
    this.checker = new RequestChecker(spec.inputs(), outputs.stream().map(TensorSpec::name).toList());
  }

  @Override
  public void accept(InferenceRequest request) {
    checker.check(request);
  }
}
