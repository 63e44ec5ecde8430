package io.kiln.serve;

import java.util.Comparator;
import java.util.Objects;

/**
 * One thing wrong with a deployment file, where it is and what to do about it.
 *
 * @param file the file as named to the loader
 * @param line 1-based line
 * @param column 1-based column
 * @param path where in the schema, e.g. {@code deployments[0].pool.workers_per_node}; empty for the
 *     document as a whole (syntax errors, size limits)
 * @param message what is wrong, and where possible how to fix it
 */
public record Problem(String file, int line, int column, String path, String message) implements Comparable<Problem> {

  private static final Comparator<Problem> ORDER = Comparator.comparing(Problem::file)
      .thenComparingInt(Problem::line).thenComparingInt(Problem::column);

  public Problem {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(message, "message");
    if (line < 1 || column < 1) {
      throw new IllegalArgumentException("line and column are 1-based, got " + line + ":" + column);
    }
  }

  /** Orders by file, line and column. */
  @Override
  public int compareTo(Problem o) {
    return ORDER.compare(this, o);
  }

  /** {@code file:line:column: path: message}, the path left out when empty. */
  @Override
  public String toString() {
    return file + ":" + line + ":" + column + ": " + (path.isEmpty() ? "" : path + ": ") + message;
  }
}
