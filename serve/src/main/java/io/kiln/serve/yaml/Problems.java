package io.kiln.serve.yaml;

import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import java.util.ArrayList;
import java.util.List;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Collects the problems of one document. Reading goes on after a problem so that all of them are reported
 * together; only a bounded number are kept, because a hostile or badly broken file could otherwise yield
 * millions. Not thread-safe: one instance per load.
 */
public final class Problems {

  /** Problems kept before reading stops. */
  public static final int MAX_PROBLEMS = 100;

  private final String file;
  private final List<Problem> problems = new ArrayList<>();

  public Problems(String file) {
    this.file = file;
  }

  public String file() {
    return file;
  }

  /** Reports a problem at the start of {@code node}. */
  public void at(Node node, String path, String message) {
    at(node.getStartMark(), path, message);
  }

  public void at(Mark mark, String path, String message) {
    if (mark == null) {
      at(1, 1, path, message);
    } else {
      at(mark.getLine() + 1, mark.getColumn() + 1, path, message);
    }
  }

  /**
   * Reports a problem at a 1-based position.
   *
   * @throws Abort once {@link #MAX_PROBLEMS} are collected
   */
  public void at(int line, int column, String path, String message) {
    problems.add(new Problem(file, Math.max(1, line), Math.max(1, column), path, message));
    if (problems.size() == MAX_PROBLEMS) {
      problems.add(new Problem(file, Math.max(1, line), Math.max(1, column), "",
          "too many problems; stopped after " + MAX_PROBLEMS));
      throw new Abort();
    }
  }

  /** Reports a problem that ends reading (the rest of the document cannot be trusted or is too costly). */
  public Abort fatal(Mark mark, String path, String message) {
    if (problems.size() < MAX_PROBLEMS) {
      at(mark, path, message);
    }
    return new Abort();
  }

  public int count() {
    return problems.size();
  }

  public boolean isEmpty() {
    return problems.isEmpty();
  }

  /** The problems in file order. */
  public List<Problem> sorted() {
    List<Problem> copy = new ArrayList<>(problems);
    copy.sort(null);
    return copy;
  }

  /** Throws a {@link DeploymentValidationException} if any problem was reported. */
  public void throwIfAny() {
    if (!problems.isEmpty()) {
      throw new DeploymentValidationException(sorted());
    }
  }

  /** Stops reading a document; the problems already collected say why. */
  public static final class Abort extends RuntimeException {
    Abort() {
      super("reading stopped", null, false, false);
    }
  }
}
