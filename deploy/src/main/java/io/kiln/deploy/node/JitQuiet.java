package io.kiln.deploy.node;

import java.util.ArrayList;
import java.util.List;

/**
 * Tells when the JIT has caught up with a warm-up's traffic, from samples of the JVM's total compilation time
 * ({@link java.lang.management.CompilationMXBean#getTotalCompilationTime()}). While the request path is being
 * compiled, the compiler threads work without pause (on one core they take about half of it, so throughput
 * may look flat while much is still interpreted); once the hot path is compiled, compilation almost stops.
 * Quiet means: over the last {@link #WINDOW} the compilation time grew by less than {@link #QUIET_SHARE} of
 * that window, at {@link #CONFIRMATIONS} samples in a row. The window is long because the total grows only as
 * compilations complete, and one large method may take most of a second on a loaded core.
 *
 * <p>A pure function of the samples and their times (the caller's clock); not thread-safe.
 */
final class JitQuiet {

  static final long WINDOW = 2_000_000_000L;
  static final double QUIET_SHARE = 0.05;
  static final int CONFIRMATIONS = 3;

  private record Sample(long nanos, long compileMillis) {
  }

  private final List<Sample> samples = new ArrayList<>();
  private int quiet;
  private boolean reached;

  /** Adds a sample: the JVM had spent {@code compileMillis} compiling, in all, at {@code nanos}. */
  void sample(long nanos, long compileMillis) {
    samples.add(new Sample(nanos, compileMillis));
    while (samples.size() > 2 && nanos - samples.get(1).nanos() >= WINDOW) {
      samples.remove(0); // the oldest one kept is the last at or before the window's start
    }
    Sample first = samples.get(0);
    if (reached || nanos - first.nanos() < WINDOW) {
      return;
    }
    double grewMillis = compileMillis - first.compileMillis();
    double windowMillis = (nanos - first.nanos()) / 1e6;
    quiet = grewMillis < QUIET_SHARE * windowMillis ? quiet + 1 : 0;
    reached = quiet >= CONFIRMATIONS;
  }

  boolean reached() {
    return reached;
  }
}
