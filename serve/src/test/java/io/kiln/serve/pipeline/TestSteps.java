package io.kiln.serve.pipeline;

import java.util.Map;

/** User step classes for tests. */
public final class TestSteps {

  private TestSteps() {
  }

  /** Echoes its params and node. */
  public static final class Echo implements Step {
    @Override
    public Map<String, Object> run(StepContext ctx) {
      return Map.of("params", ctx.params(), "node", ctx.nodeId(), "attempt", ctx.attempt());
    }
  }

  /** Not a step. */
  public static final class NotAStep {
  }

  /** A step without a usable constructor. */
  public static final class NoDefaultConstructor implements Step {
    public NoDefaultConstructor(String x) {
    }

    @Override
    public Map<String, Object> run(StepContext ctx) {
      return Map.of();
    }
  }
}
