package io.kiln.serve;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A deployment file (or JSON spec) was refused: it holds every problem found, in file order, and its
 * message lists them one per line as {@code file:line:column: path: message}. Nothing of a refused file
 * may be applied.
 */
public class DeploymentValidationException extends RuntimeException {

  private final List<Problem> problems;

  public DeploymentValidationException(List<Problem> problems) {
    super(render(problems));
    if (problems.isEmpty()) {
      throw new IllegalArgumentException("a validation failure needs at least one problem");
    }
    this.problems = List.copyOf(problems);
  }

  public List<Problem> problems() {
    return problems;
  }

  private static String render(List<Problem> problems) {
    return problems.stream().map(Problem::toString).collect(Collectors.joining("\n"));
  }
}
