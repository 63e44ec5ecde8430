package io.kiln.pipelines;

import com.fasterxml.jackson.annotation.JsonValue;

/** What a step does: one of the built-ins, or a user class. The YAML key of the step's action is its spelling. */
public enum StepKind {
  /** Copy a {@code file://} or {@code http(s)://} URI into the node-local cache. */
  FETCH("fetch"),
  /** Read a cached input on its node and run it through that node's pool of a deployment, or a graph's steps there. */
  INFER("infer"),
  /** POST the run's results as JSON to a URL. */
  WEBHOOK("webhook"),
  /** Render a prompt from the run's input and earlier steps' results and generate text with a text model's pool. */
  GENERATE("generate"),
  /** A {@link Step} implementation on the classpath. */
  CLASS("class");

  private final String spelling;

  StepKind(String spelling) {
    this.spelling = spelling;
  }

  @JsonValue
  public String spelling() {
    return spelling;
  }
}
