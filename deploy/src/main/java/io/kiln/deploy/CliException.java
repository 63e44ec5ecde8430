package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;

/** A failure the CLI reports as one message (and exit code 1), never as a stack trace. */
final class CliException extends RuntimeException {

  private final transient JsonNode body;

  CliException(String message) {
    this(message, null);
  }

  CliException(String message, JsonNode body) {
    super(message);
    this.body = body;
  }

  JsonNode body() {
    return body;
  }
}
