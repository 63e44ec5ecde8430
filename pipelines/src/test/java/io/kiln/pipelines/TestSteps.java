package io.kiln.pipelines;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

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

  /** Gates by name: a {@link Hold} step waits until its gate opens. */
  public static final Map<String, CountDownLatch> GATES = new ConcurrentHashMap<>();
  /** Holds in progress by run id, with the node they run on. */
  public static final Map<String, String> HOLDING = new ConcurrentHashMap<>();

  public static CountDownLatch gate(String name) {
    return GATES.computeIfAbsent(name, n -> new CountDownLatch(1));
  }

  /** Waits (up to a minute) until the gate named by param {@code gate} opens. */
  public static final class Hold implements Step {
    @Override
    public Map<String, Object> run(StepContext ctx) throws InterruptedException {
      HOLDING.put(ctx.runId(), ctx.nodeId());
      try {
        if (!gate(ctx.params().get("gate")).await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("gate " + ctx.params().get("gate") + " never opened");
        }
        return Map.of("held_on", ctx.nodeId());
      } finally {
        HOLDING.remove(ctx.runId());
      }
    }
  }

  /** Attempts by run id. */
  public static final Map<String, AtomicInteger> ATTEMPTS = new ConcurrentHashMap<>();

  /** Fails its first {@code fail} (param) attempts of a run, then succeeds. */
  public static final class Flaky implements Step {
    @Override
    public Map<String, Object> run(StepContext ctx) {
      int n = ATTEMPTS.computeIfAbsent(ctx.runId(), r -> new AtomicInteger()).incrementAndGet();
      if (n <= Integer.parseInt(ctx.params().getOrDefault("fail", "1"))) {
        throw new IllegalStateException("flaky failure " + n);
      }
      ctx.progress("succeeded on attempt " + n);
      return Map.of("attempt", ctx.attempt(), "calls", n);
    }
  }
}
