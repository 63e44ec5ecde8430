package io.kiln.loadtest;

import java.io.PrintStream;

/** Receives a {@link Progress} about once a second, on the run's control thread; must not block long. */
@FunctionalInterface
public interface ProgressListener {
  ProgressListener NONE = p -> { };

  void onProgress(Progress progress);

  /** Prints {@link Progress#line()} to {@code out}. */
  static ProgressListener printingTo(PrintStream out) {
    return p -> out.println(p.line());
  }
}
